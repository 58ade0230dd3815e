// Probot, the reference `bench/intake.py` measures railyard's webhook intake against (issue 28).
//
// A Node http server on 127.0.0.1:$PORT: GET /healthz answers 200 "ok" (bench's ServerProcess
// waits on it), everything else goes to Probot's createNodeMiddleware on /webhooks, which
// checks the content type and the delivery headers, verifies X-Hub-Signature-256 with
// WEBHOOK_SECRET (@octokit/webhooks), parses the JSON and runs the app: it subscribes to
// issue_comment and does nothing, so Probot answers 200 once the handler returns and keeps
// nothing. Probot logs at "warn" (LOG_LEVEL overrides it), so logging does not dominate.
//
//   make bench-probot   # npm ci --prefix bench/probot
//   PORT=3000 APP_ID=1 PRIVATE_KEY="$(cat key.pem)" WEBHOOK_SECRET=... node bench/probot/index.js
"use strict";

const http = require("node:http");
const { Probot, createNodeMiddleware } = require("probot");

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`bench/probot/index.js needs ${name}`);
    process.exit(2);
  }
  return value;
}

const probot = new Probot({
  appId: required("APP_ID"),
  privateKey: required("PRIVATE_KEY"),
  secret: required("WEBHOOK_SECRET"),
  logLevel: process.env.LOG_LEVEL || "warn",
});

const appFn = (app) => {
  app.on("issue_comment", async () => {});
};

const middleware = createNodeMiddleware(appFn, { probot, webhooksPath: "/webhooks" });

const server = http.createServer((request, response) => {
  if (request.method === "GET" && request.url === "/healthz") {
    response.writeHead(200, { "content-type": "text/plain" });
    response.end("ok");
    return;
  }
  middleware(request, response, () => {
    response.writeHead(404);
    response.end();
  });
});

const host = process.env.HOST || "127.0.0.1";
const port = Number(process.env.PORT || "3000");
server.listen(port, host);

process.on("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
