"""compose.yaml, checked statically (there is no container engine here): PostgreSQL, two
`railyard serve`, two `railyard worker`, one database, settings from `.env`, health checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from app.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]


def running(command: str) -> dict[str, dict[str, Any]]:
    """The services whose command is `railyard COMMAND ...`."""
    return {name: s for name, s in SERVICES.items() if s.get("command", [])[:2] == ["railyard", command]}


def railyard_services() -> dict[str, dict[str, Any]]:
    """Every service built from this repository's Dockerfile."""
    return {name: service for name, service in SERVICES.items() if service.get("build") == "."}


def test_the_file_has_the_database_two_servers_and_two_workers() -> None:
    """PostgreSQL, `railyard serve` twice and `railyard worker` twice (plus the one-shot migrate)."""
    assert SERVICES["db"]["image"].startswith("postgres:")
    assert len(running("serve")) == 2 and len(running("worker")) == 2
    assert set(railyard_services()) == {*running("serve"), *running("worker"), *running("migrate")}


def test_every_command_is_one_the_cli_accepts() -> None:
    """Each service's arguments parse with railyard's own argument parser."""
    for name, service in railyard_services().items():
        args = build_parser().parse_args(service["command"][1:])
        assert args.command == service["command"][1], name


def test_every_railyard_service_shares_the_database_and_reads_dot_env() -> None:
    """One DATABASE_URL on the `db` service's PostgreSQL, whose password comes from `.env`, for all."""
    urls = {service["environment"]["DATABASE_URL"] for service in railyard_services().values()}
    [url] = urls
    assert url.startswith("postgresql+psycopg://railyard:") and "@db:5432/railyard" in url
    assert (
        "${POSTGRES_PASSWORD" in url
        and "${POSTGRES_PASSWORD" in SERVICES["db"]["environment"]["POSTGRES_PASSWORD"]
    )
    assert all(service["env_file"] == ".env" for service in railyard_services().values())
    assert (ROOT / "Dockerfile").exists()


def test_the_schema_is_migrated_once_before_servers_and_workers_start() -> None:
    """migrate waits for a healthy database; servers and workers wait for migrate to finish."""
    [migrate] = running("migrate").values()
    assert migrate["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert migrate["restart"] == "no"
    migrate_name = next(iter(running("migrate")))
    for service in (*running("serve").values(), *running("worker").values()):
        assert service["depends_on"] == {migrate_name: {"condition": "service_completed_successfully"}}


def test_the_servers_listen_on_two_host_ports_with_a_healthz_check() -> None:
    """Each server maps its own host port to the image's 3000 and is checked on /healthz."""
    ports = [port for service in running("serve").values() for port in service["ports"]]
    assert len({port.split(":")[0] for port in ports}) == 2
    assert all(port.endswith(":3000") for port in ports)
    for service in running("serve").values():
        test = service["healthcheck"]["test"]
        assert test[:3] == ["CMD", "python", "-c"] and "/healthz" in test[3]
        compile(test[3], "healthcheck", "exec")


def test_the_database_has_a_health_check_and_a_volume() -> None:
    """pg_isready decides when PostgreSQL is healthy; its data lives on a named volume."""
    database = SERVICES["db"]
    assert database["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    [volume] = database["volumes"]
    assert volume.split(":")[0] in COMPOSE["volumes"]


def test_workers_turn_off_the_images_http_check() -> None:
    """A worker has no HTTP port, so the image's /healthz check, inherited, would mark it unhealthy."""
    assert all(service["healthcheck"] == {"disable": True} for service in running("worker").values())
