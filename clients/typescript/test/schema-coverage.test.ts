/**
 * The client and the server's OpenAPI schema cannot drift apart: every method of the client sends an operation
 * of the schema the live server publishes, and every operation of that schema has a method. A new endpoint on the
 * server without its method fails here, as it does for the Python client (tests/clients/test_client_matches_schema.py).
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client } from "../src/index.js";
import { live } from "./live.js";

const AN_ID = "00000000-0000-0000-0000-000000000001";

/** Every method of the client, called once, with what each request looked like on the wire. */
async function requestsOfEveryMethod(): Promise<{ called: Set<string>; sent: Set<string> }> {
  const sent = new Set<string>();
  const recording: typeof fetch = async (input, init) => {
    sent.add(`${init?.method} ${new URL(String(input)).pathname}`);
    throw new Error("recorded, not sent");
  };
  const haki = new Client({ baseUrl: "http://127.0.0.1:1", apiKey: "k", projectId: "p", maxRetries: 0, fetch: recording });
  const calls: Record<string, (c: Client) => Promise<unknown> | AsyncGenerator<unknown>> = {
    writeFact: (c) => c.writeFact("s", "t"),
    writeFacts: (c) => c.writeFacts([{ subject_id: "s", text: "t" }]),
    listFacts: (c) => c.listFacts("s"),
    iterFacts: (c) => c.iterFacts("s").next(),
    getFact: (c) => c.getFact(AN_ID),
    getJob: (c) => c.getJob(AN_ID),
    updateFact: (c) => c.updateFact(AN_ID, { importance: 0.5 }),
    retractFact: (c) => c.retractFact(AN_ID),
    factHistory: (c) => c.factHistory(AN_ID),
    writeEvent: (c) => c.writeEvent("s", "t", new Date()),
    writeEvents: (c) => c.writeEvents([{ subject_id: "s", text: "t", occurred_at: new Date() }]),
    listEvents: (c) => c.listEvents("s"),
    getEvent: (c) => c.getEvent(AN_ID),
    createIdentityBlock: (c) => c.createIdentityBlock("s", "persona", "t"),
    listIdentityBlocks: (c) => c.listIdentityBlocks(),
    getIdentityBlock: (c) => c.getIdentityBlock(AN_ID),
    updateIdentityBlock: (c) => c.updateIdentityBlock(AN_ID, { enabled: false }),
    deleteIdentityBlock: (c) => c.deleteIdentityBlock(AN_ID),
    writeProcedure: (c) => c.writeProcedure(null, "title", "t"),
    listProcedures: (c) => c.listProcedures("s"),
    getProcedure: (c) => c.getProcedure(AN_ID),
    updateProcedure: (c) => c.updateProcedure(AN_ID, { importance: 0.1 }),
    retractProcedure: (c) => c.retractProcedure(AN_ID),
    context: (c) => c.context("s", "q"),
    inspect: (c) => c.inspect(AN_ID),
    replay: (c) => c.replay(AN_ID, { as_of: "original" }),
    listConflicts: (c) => c.listConflicts(),
    getConflict: (c) => c.getConflict(AN_ID),
    resolveConflict: (c) => c.resolveConflict(AN_ID, { dismiss: true }),
    eraseSubject: (c) => c.eraseSubject("s"),
    listConsents: (c) => c.listConsents("s"),
    grantConsent: (c) => c.grantConsent("s", "health"),
    revokeConsent: (c) => c.revokeConsent("s", "health", { erase: true }),
    getProject: (c) => c.getProject(),
    updateProject: (c) => c.updateProject({ consent_required: false }),
    statsOverview: (c) => c.statsOverview(),
    health: (c) => c.health(),
    healthLive: (c) => c.healthLive(),
    healthReady: (c) => c.healthReady(),
  };
  const methods = Object.getOwnPropertyNames(Client.prototype).filter((name) => name !== "constructor");
  assert.deepEqual(Object.keys(calls).sort(), methods.sort(), "a method of the client is not exercised here: add it");
  for (const call of Object.values(calls)) {
    const pending = call(haki);
    await (Symbol.asyncIterator in pending ? pending.next() : pending).catch(() => undefined);
  }
  return { called: new Set(Object.keys(calls)), sent };
}

async function schemaOperations(): Promise<Map<string, RegExp>> {
  const response = await fetch(`${live.url}/v1/schema?format=json`);
  assert.equal(response.status, 200);
  const schema = (await response.json()) as { paths: Record<string, Record<string, unknown>> };
  const operations = new Map<string, RegExp>();
  for (const [template, methods] of Object.entries(schema.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`);
    for (const method of Object.keys(methods)) {
      if (["get", "post", "patch", "put", "delete"].includes(method)) operations.set(`${method.toUpperCase()} ${template}`, pattern);
    }
  }
  return operations;
}

function operationOf(request: string, operations: Map<string, RegExp>): string | undefined {
  const [method, path] = request.split(" ");
  for (const [operation, pattern] of operations) {
    if (operation.startsWith(`${method} `) && pattern.test(path!)) return operation;
  }
  return undefined;
}

test("every request of the client is an operation of the schema, and every operation has a method", async () => {
  const [{ sent }, operations] = await Promise.all([requestsOfEveryMethod(), schemaOperations()]);
  const unknown = [...sent].filter((request) => !operationOf(request, operations));
  assert.deepEqual(unknown, [], "requests the schema does not have");
  const covered = new Set([...sent].map((request) => operationOf(request, operations)));
  const missing = [...operations.keys()].filter((operation) => !covered.has(operation));
  assert.deepEqual(missing, [], "operations of the schema without a method of the client");
  assert.ok(operations.has("POST /v1/context"), [...operations.keys()].join(", "));
});
