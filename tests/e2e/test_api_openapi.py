"""`/api/v1/openapi.json` describes exactly the API's routes (checked against the real router)."""

from __future__ import annotations

import re

from aiohttp import web

from app.views.api_text import REFUSAL_STATUS
from app.web.openapi import openapi_document
from policies.refusals import RefusalCode
from support.world import World


def _routes(app: web.Application) -> set[tuple[str, str]]:
    """(method, path) of every route under /api/v1 but the catch-alls, in OpenAPI's path style."""
    found = set()
    for route in app.router.routes():
        path = route.resource.canonical if route.resource is not None else ""
        if path.startswith("/api/v1/") and route.method != "*":
            found.add((route.method.lower(), re.sub(r"\{(\w+)(:[^}]*)?\}", r"{\1}", path)))
    return found


async def test_the_description_names_every_route_and_method_and_nothing_else(world: World) -> None:
    """The served document's paths and methods are the router's."""
    async with world.server.client.get("/api/v1/openapi.json") as response:
        assert response.status == 200
        document = await response.json()
    assert document == openapi_document() and document["openapi"].startswith("3.1")
    described = {(method, path) for path, item in document["paths"].items() for method in item}
    assert described == _routes(world.server.app)


def test_every_refusal_code_has_a_status_and_the_description_lists_them() -> None:
    """No refusal falls through to a default status; every status it can give is described."""
    assert set(REFUSAL_STATUS) == set(RefusalCode)
    responses = openapi_document()["paths"]["/api/v1/repos/{owner}/{repo}/tickets/{number}/commands"]["post"]
    assert {str(status) for status in REFUSAL_STATUS.values()} <= set(responses["responses"])
