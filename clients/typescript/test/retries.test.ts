/**
 * Retries, timeouts and unreachable servers, against a stub HTTP server of the test's own on 127.0.0.1: hakimem
 * has no way to answer 429 or 503 with Retry-After on demand, nor to drop a connection mid-call.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, test } from "node:test";

import {
  Client,
  InvalidRequestError,
  RateLimitedError,
  UnavailableError,
  parseRetryAfter,
  type ClientOptions,
} from "../src/index.js";

type Handler = (req: IncomingMessage, res: ServerResponse, attempt: number) => void;
let handler: Handler;
let requests: string[] = [];
const server = createServer((req, res) => {
  requests.push(`${req.method} ${req.url?.split("?")[0]}`);
  req.resume();
  req.on("end", () => handler(req, res, requests.length));
});
let url = "";

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});
beforeEach(() => {
  requests = [];
});

function stub(options: ClientOptions = {}): Client {
  return new Client({ baseUrl: url, apiKey: "k", projectId: "p", backoffMs: 5, ...options });
}

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

const HEALTH = { status: "ok", database: "ok", vector_extension: "0.8.0", embedder: "hashing", embed_dim: 384 };
const refusal = (code: string) => ({ error: { code, message: code, details: {} } });

/** A port nothing listens on: one the system gave, then closed. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

test("a 503 with Retry-After waits that long, then succeeds", async () => {
  const consents = { project_id: "p", subject_id: "s", consented: ["health"], history: [] };
  handler = (_req, res, attempt) =>
    attempt === 1 ? answer(res, 503, refusal("database_unavailable"), { "Retry-After": "1" }) : answer(res, 200, consents);
  const started = performance.now();
  assert.deepEqual(await stub().listConsents("s"), consents);
  assert.ok(performance.now() - started >= 990, `waited ${performance.now() - started} ms`);
  assert.deepEqual(requests, ["GET /v1/subjects/s/consents", "GET /v1/subjects/s/consents"]);
});

test("a 429 still refused after the retries is a RateLimitedError with the last Retry-After", async () => {
  handler = (_req, res) => answer(res, 429, refusal("rate_limited"), { "Retry-After": "0" });
  const error = await stub({ maxRetries: 2 }).writeFact("s", "t").catch((e) => e);
  assert.ok(error instanceof RateLimitedError, String(error));
  assert.deepEqual([error.status, error.code, error.retryAfter], [429, "rate_limited", 0]);
  assert.equal(requests.length, 3);
});

test("a Retry-After longer than maxBackoffMs is not waited for", async () => {
  handler = (_req, res) => answer(res, 503, refusal("database_unavailable"), { "Retry-After": "120" });
  const error = await stub({ maxBackoffMs: 1000 }).getFact("f").catch((e) => e);
  assert.ok(error instanceof UnavailableError && error.retryAfter === 120, String(error));
  assert.equal(requests.length, 1);
});

test("a 503 without Retry-After is retried after a backoff, and other errors are not retried", async () => {
  handler = (_req, res, attempt) => attempt === 1 ? answer(res, 503, refusal("embedder_unavailable")) : answer(res, 400, refusal("invalid_request"));
  await assert.rejects(stub().writeFact("s", "t"), InvalidRequestError);
  assert.equal(requests.length, 2);
});

test("an answer outside the error contract keeps its status's class", async () => {
  handler = (_req, res) => { res.writeHead(503, { "Content-Type": "text/html" }); res.end("<h1>Bad gateway</h1>"); };
  for (const call of [(c: Client) => c.getFact("f"), (c: Client) => c.health()]) {
    const error = await call(stub({ maxRetries: 0 })).catch((e) => e);
    assert.ok(error instanceof UnavailableError, String(error));
    assert.deepEqual([error.status, error.code], [503, "unexpected_response"]);
  }
});

test("readiness answers its report on 503, without retrying; the error contract is still an error", async () => {
  const report = { status: "not_ready", database: "ok", vector_extension: "0.8.0", embedder: "hashing",
    embedder_status: "unavailable", embed_dim: 384 };
  handler = (_req, res) => answer(res, 503, report);
  assert.deepEqual(await stub().healthReady(), report);
  assert.equal(requests.length, 1);
  // but a process that answers every request "database_unavailable" for a while answers readiness so too
  handler = (_req, res) => answer(res, 503, refusal("database_unavailable"), { "Retry-After": "0" });
  await assert.rejects(stub({ maxRetries: 1 }).healthReady(),
    (e) => e instanceof UnavailableError && e.code === "database_unavailable");
});

test("a lost connection is retried only for calls that are safe to repeat", async () => {
  handler = (req) => req.socket.destroy();
  const write = await stub({ maxRetries: 2 }).writeFact("s", "t").catch((e) => e);
  assert.ok(write instanceof UnavailableError && write.code === "connection_error", String(write));
  assert.equal(requests.length, 1);
  requests = [];
  await assert.rejects(stub({ maxRetries: 2 }).listFacts("s"), UnavailableError);
  assert.equal(requests.length, 3);
});

test("a call that gets no answer in time is a connection error saying so", async () => {
  handler = () => {};
  let attempts = 0;
  const counting: typeof fetch = (input, init) => { attempts++; return fetch(input, init); };
  const error = await stub({ timeoutMs: 100, fetch: counting }).writeEvent("s", "t", new Date()).catch((e) => e);
  assert.ok(error instanceof UnavailableError, String(error));
  assert.match(error.message, /no answer within 100 ms/);
  assert.equal(attempts, 1, "a write that may have been applied is not sent again");
});

test("an unreachable server is a connection error naming its URL, after retrying even a write", async () => {
  const port = await closedPort();
  let attempts = 0;
  const counting: typeof fetch = (input, init) => { attempts++; return fetch(input, init); };
  const nowhere = new Client({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "k", projectId: "p", maxRetries: 2,
    backoffMs: 1, fetch: counting });
  const error = await nowhere.writeFact("s", "t").catch((e) => e);
  assert.ok(error instanceof UnavailableError, String(error));
  assert.deepEqual([error.code, error.status], ["connection_error", null]);
  assert.equal(error.message, `connection_error: the hakimem server could not be reached at http://127.0.0.1:${port} (ECONNREFUSED)`);
  assert.equal(attempts, 3);
});

test("Retry-After is read as seconds or as an HTTP date", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("7", now), 7);
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now), 30);
  assert.equal(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now), 0);
  assert.equal(parseRetryAfter("soon", now), null);
  assert.equal(parseRetryAfter(null, now), null);
});

test("the URL and the key come from HAKI_URL and HAKI_API_KEY when not given", async () => {
  handler = (req, res) => answer(res, 200, { ...HEALTH, auth: req.headers.authorization });
  const saved = { ...process.env };
  try {
    process.env.HAKI_URL = `${url}/`;
    process.env.HAKI_API_KEY = "from-env";
    const health = await new Client().health() as unknown as { auth: string };
    assert.equal(health.auth, "Bearer from-env");
    delete process.env.HAKI_URL;
    process.env.HAKI_PORT = "8141";
    assert.equal(new Client().baseUrl, "http://127.0.0.1:8141");
    delete process.env.HAKI_API_KEY;
    assert.throws(() => new Client(), /no API key/);
  } finally {
    process.env = saved;
  }
});
