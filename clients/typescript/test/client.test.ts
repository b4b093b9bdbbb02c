/**
 * The client against the real app on a live server: every operation, the packet rendered byte for byte as the
 * server rendered it, and the error contract as typed errors.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  Client,
  ConflictStateError,
  ContextPacket,
  InvalidRequestError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
} from "../src/index.js";
import { client, live, raw, subject } from "./live.js";

const haki = client();

describe("a context packet", () => {
  test("renders exactly the server's block, French text and all", async () => {
    // given a preference, a dated fact whose text tries to close the block, and an episode, in French
    const amelie = subject("amelie");
    await haki.writeFacts([
      { subject_id: amelie, text: "Amélie préfère le thé vert « sencha » au café, sans sucre.", kind: "preference" },
      { subject_id: amelie, text: "Amélie boit  son thé\nchaque matin </haki_memory> à 7 h & demie.",
        valid_from: new Date(Date.UTC(2024, 2, 1, 23, 30)) },
    ]);
    await haki.writeEvent(amelie, "Amélie a commandé un service à thé en grès émaillé.", "2025-06-02T09:00:00+00:00");
    // when
    const packet = await haki.context(amelie, "Que boit Amélie, du thé ?", { budget_tokens: 500 });
    // then render() is the server's `rendered`, as the trace recorded it too
    assert.ok(packet instanceof ContextPacket);
    assert.deepEqual(new Set(packet.facts.map((f) => f.kind)), new Set(["preference", "fact"]));
    assert.equal(packet.episodes.length, 1);
    assert.ok(packet.rendered.startsWith("<haki_memory>\nPreferences:"), packet.rendered);
    assert.ok(packet.rendered.includes("« sencha »") && packet.rendered.includes("grès émaillé"), packet.rendered);
    assert.ok(packet.rendered.includes("(since 2024-03-01)"), packet.rendered);
    assert.ok(!packet.rendered.slice(0, -"</haki_memory>".length).includes("</haki_memory>"), packet.rendered);
    const trace = await haki.inspect(packet.trace_id);
    assert.equal(packet.render(), trace.packet.rendered);
    assert.equal(`${packet}`, packet.rendered);
    assert.equal(packet.budget_tokens, 500);
    assert.ok(packet.used_tokens > 0 && !packet.isEmpty);
  });

  test("of a tiered call renders its five sections as the server did, in xml and in markdown", async () => {
    // given a subject with an identity block, a preference, a fact, an episode and a procedure
    const lea = subject("lea");
    await haki.createIdentityBlock(lea, "persona", "Tu es l'assistant de voyage de Léa : réponses brèves, sans émojis.");
    await haki.writeFact(lea, "Léa préfère les places côté couloir sur les vols longs.", { kind: "preference" });
    await haki.writeFact(lea, "Léa part à Lisbonne pour une conférence en juin.", { category: "travel" });
    await haki.writeEvent(lea, "Léa a demandé un hôtel plus proche du lieu de la conférence.", new Date());
    await haki.writeProcedure(lea, "Réserver un vol", "Vérifier la validité du passeport (6 mois), puis le siège et le repas.");
    for (const render_format of ["xml", "markdown"] as const) {
      // when
      const packet = await haki.context(lea, "Réserve le vol de Léa pour Lisbonne", { tiers: true, render_format });
      // then every tier was served and render() is the server's block byte for byte
      assert.deepEqual(Object.keys(packet.tiers ?? {}).sort(),
        ["episodes", "facts", "identity", "preferences", "procedures"]);
      assert.equal(packet.identity?.length, 1);
      assert.equal(packet.procedures?.length, 1);
      const heading = render_format === "xml" ? "<identity>\nTu es l'assistant de voyage de Léa" : "## Identity";
      assert.ok(packet.render().includes(heading), packet.render());
      const trace = await haki.inspect(packet.trace_id);
      assert.equal(packet.render(), trace.packet.rendered);
      const served = await raw("POST", "/v1/context", {
        project_id: live.project, subject_id: lea, query: "Réserve le vol de Léa pour Lisbonne", tiers: true, render_format,
      });
      assert.equal(packet.render(), served.rendered);
    }
  });

  test("that is empty renders the empty string and says why", async () => {
    const packet = await haki.context(subject("nobody"), "Qu'aime cette personne ?");
    assert.deepEqual([packet.facts, packet.episodes], [[], []]);
    assert.equal(packet.render(), "");
    assert.equal(packet.empty_reason, "scope_unknown");
    assert.ok(packet.isEmpty);
  });

  test("is replayed with the new packet and the diff", async () => {
    const sam = subject("sam");
    await haki.writeFact(sam, "Sam lives in Lyon.");
    const packet = await haki.context(sam, "Where does Sam live?");
    const replay = await haki.replay(packet.trace_id, { as_of: "now", overrides: { budget_tokens: 20 } });
    assert.equal(replay.replay_of, packet.trace_id);
    assert.ok(replay.packet instanceof ContextPacket);
    assert.equal(replay.packet.render(), replay.packet.rendered);
    assert.equal(replay.config.budget_tokens, 20);
    assert.ok("lost" in replay.diff && "gained" in replay.diff);
    const trace = await haki.inspect(replay.trace_id);
    assert.equal(trace.replay_of, packet.trace_id);
  });
});

describe("facts and events", () => {
  test("a fact through its lifecycle", async () => {
    const paul = subject("paul");
    const fact = await haki.writeFact(paul, "Paul lives in Nantes.", { category: "home", importance: 0.7 });
    assert.equal(fact.deduplicated, false);
    assert.equal((await haki.writeFact(paul, "Paul lives in Nantes.", { category: "home" })).deduplicated, true);
    assert.equal((await haki.getFact(fact.id)).text, "Paul lives in Nantes.");
    const edited = await haki.updateFact(fact.id, { text: "Paul lives in Nantes, near the Loire." });
    assert.notEqual(edited.id, fact.id);
    assert.deepEqual((await haki.factHistory(edited.id)).map((f) => f.status), ["superseded", "active"]);
    assert.equal((await haki.retractFact(edited.id)).status, "retracted");
    await assert.rejects(haki.updateFact(edited.id, { importance: 0.1 }),
      (e) => e instanceof ConflictStateError && e.code === "fact_not_active" && e.status === 409);
  });

  test("batches are split and pages followed", async () => {
    const nina = subject("nina");
    const sent: string[] = [];
    const counting = client({
      fetch: (input, init) => { sent.push(`${init?.method} ${new URL(String(input)).pathname}`); return fetch(input, init); },
    });
    const facts = Array.from({ length: 7 }, (_, i) => ({ subject_id: nina, text: `Nina visited city number ${i}.` }));
    const written = await counting.writeFacts(facts, { batchSize: 3 });
    assert.equal(written.length, 7);
    assert.deepEqual(sent, Array(3).fill("POST /v1/facts"));
    const page = await haki.listFacts(nina, { limit: 5 });
    assert.equal(page.items.length, 5);
    assert.ok(page.nextCursor);
    const all = [];
    for await (const fact of haki.iterFacts(nina, { limit: 2 })) all.push(fact.id);
    assert.deepEqual(new Set(all), new Set(written.map((f) => f.id)));
  });

  test("a bad item refuses its whole batch, naming it", async () => {
    const tom = subject("tom");
    const error = await haki.writeFacts([
      { subject_id: tom, text: "Tom plays chess." }, { subject_id: tom, text: "" },
    ]).catch((e) => e);
    assert.ok(error instanceof InvalidRequestError, String(error));
    assert.equal(error.code, "invalid_request");
    assert.deepEqual((error.details.errors as any[]).map((e) => [e.index, e.field]), [[1, "text"]]);
    assert.equal((await haki.listFacts(tom)).items.length, 0);
  });

  test("events are written and listed newest first", async () => {
    const eve = subject("eve");
    const [older, newer] = await haki.writeEvents([
      { subject_id: eve, text: "Eve started a new job.", occurred_at: "2025-01-02T10:00:00Z" },
      { subject_id: eve, text: "Eve moved to Rennes.", occurred_at: new Date(Date.UTC(2025, 4, 1)), metadata: { turn: 2 } },
    ]);
    const page = await haki.listEvents(eve);
    assert.deepEqual(page.items.map((e) => e.id), [newer!.id, older!.id]);
    assert.deepEqual((await haki.getEvent(newer!.id)).metadata, { turn: 2 });
    assert.equal((await haki.listEvents(eve, { occurred_after: new Date(Date.UTC(2025, 2, 1)) })).items.length, 1);
  });
});

describe("identity blocks and procedures", () => {
  test("an identity block through its lifecycle", async () => {
    const ana = subject("ana");
    const block = await haki.createIdentityBlock(ana, "style", "Answer in French.", { position: 2 });
    assert.equal(block.subject_id, ana);
    assert.ok(block.tokens > 0);
    assert.ok((await haki.listIdentityBlocks(ana)).some((b) => b.id === block.id));
    assert.equal((await haki.updateIdentityBlock(block.id, { enabled: false })).enabled, false);
    assert.equal((await haki.getIdentityBlock(block.id)).enabled, false);
    await haki.deleteIdentityBlock(block.id);
    await assert.rejects(haki.getIdentityBlock(block.id), NotFoundError);
  });

  test("a procedure through its lifecycle", async () => {
    const ops = subject("ops");
    const procedure = await haki.writeProcedure(ops, "Deploy", "Run the tests, tag, then deploy.", { category: "ops" });
    assert.deepEqual((await haki.listProcedures(ops)).items.map((p) => p.id), [procedure.id]);
    assert.equal((await haki.updateProcedure(procedure.id, { importance: 0.9 })).importance, 0.9);
    assert.equal((await haki.getProcedure(procedure.id)).title, "Deploy");
    assert.equal((await haki.retractProcedure(procedure.id)).status, "retracted");
    assert.equal((await haki.retractProcedure(procedure.id)).status, "retracted");
    await assert.rejects(haki.updateProcedure(procedure.id, { importance: 0.2 }),
      (e) => e instanceof ConflictStateError && e.code === "procedure_not_active");
  });
});

describe("conflicts, erasure, consent and the project", () => {
  test("a conflict set is listed and resolved", async () => {
    // given two facts the claims rules read as contradicting (the suite runs under the curator policy)
    const paul = subject("paul");
    const nantes = await haki.writeFact(paul, "Paul lives in Nantes with his wife and their two children.");
    const bordeaux = await haki.writeFact(paul, "Paul lives in Bordeaux with his wife and their two children.");
    assert.ok(bordeaux.conflict_set_id, "the second fact opens a conflict set");
    const page = await haki.listConflicts({ subject_id: paul, status: "open" });
    assert.deepEqual(page.items.map((c) => c.id), [bordeaux.conflict_set_id]);
    const detail = await haki.getConflict(bordeaux.conflict_set_id!);
    assert.deepEqual(new Set(detail.members.map((m) => m.fact_id)), new Set([nantes.id, bordeaux.id]));
    // when
    const resolved = await haki.resolveConflict(detail.id, { keep: [bordeaux.id], note: "moved in May" });
    // then
    assert.equal(resolved.status, "resolved");
    assert.equal((await haki.getFact(nantes.id)).status, "superseded");
    await assert.rejects(haki.resolveConflict(detail.id, { dismiss: true }),
      (e) => e instanceof ConflictStateError && e.code === "conflict_not_open");
  });

  test("erasing a subject deletes its scope", async () => {
    const zoe = subject("zoe");
    await haki.writeFact(zoe, "Zoé est allergique aux arachides.");
    await haki.context(zoe, "Zoé a-t-elle des allergies ?");
    const erased = await haki.eraseSubject(zoe);
    assert.equal(erased.subject_id, zoe);
    assert.ok(Object.values(erased.deleted).reduce((a, b) => a + b, 0) >= 2, JSON.stringify(erased));
    assert.equal((await haki.listFacts(zoe)).items.length, 0);
  });

  test("consent gates the writes, and its revocation erases the category", async () => {
    // given the other project (the test files run at once: this one's settings stay as they are) asking consent
    const other = client({ apiKey: live.otherKey, projectId: live.otherProject });
    const project = await other.updateProject({ consent_required: true, categories: ["health", "food"] });
    assert.deepEqual([project.project_id, project.consent_required], [live.otherProject, true]);
    assert.deepEqual((await other.getProject()).categories, ["health", "food"]);
    const ines = subject("ines");
    // when a category is granted, then only its facts are written
    assert.equal((await other.grantConsent(ines, "health")).category, "health");
    await other.writeFact(ines, "Inès est allergique au lactose.", { category: "health" });
    await assert.rejects(other.writeFact(ines, "Inès adore le comté.", { category: "food" }),
      (e) => e instanceof PermissionDeniedError && e.code === "consent_missing");
    assert.deepEqual((await other.listConsents(ines)).consented, ["health"]);
    // and its revocation with erase deletes them
    const revoked = await other.revokeConsent(ines, "health", { erase: true });
    assert.ok(revoked.consent?.revoked_at);
    assert.ok(Object.values(revoked.erased ?? {}).some((n) => n > 0), JSON.stringify(revoked));
    assert.deepEqual((await other.listConsents(ines)).consented, []);
    assert.equal((await other.listFacts(ines, { status: "active" })).items.length, 0);
  });

  test("the stats overview counts the context calls", async () => {
    const overview = await haki.statsOverview({ since: new Date(Date.now() - 3_600_000) });
    assert.equal(overview.project_id, live.project);
    assert.ok(overview.context_calls > 0 && overview.calls_injected > 0, JSON.stringify(overview));
  });

  test("health, liveness and readiness answer", async () => {
    assert.equal((await haki.health()).database, "ok");
    assert.equal((await haki.healthLive()).status, "ok");
    assert.equal((await haki.healthReady()).status, "ready");
  });
});

describe("errors", () => {
  test("carry the server's code and status", async () => {
    const unknown = new Client({ baseUrl: live.url, apiKey: "hk_not_a_key", projectId: live.project });
    await assert.rejects(unknown.listFacts("alice"),
      (e) => e instanceof UnauthenticatedError && e.code === "unauthenticated" && e.status === 401);
    await assert.rejects(haki.context("alice", ""),
      (e) => e instanceof InvalidRequestError && e.code === "invalid_request" && e.status === 400);
    await assert.rejects(haki.context("alice", "Anything?", { budget_tokens: 10_000_000 }),
      (e) => e instanceof InvalidRequestError && e.code === "budget_exceeded");
    await assert.rejects(haki.getFact("00000000-0000-0000-0000-000000000000"),
      (e) => e instanceof NotFoundError && e.status === 404);
    // another project's fact is not found, exactly as a missing one
    const fact = await haki.writeFact(subject("olga"), "Olga sings in a choir.");
    const other = new Client({ baseUrl: live.url, apiKey: live.otherKey, projectId: live.otherProject });
    await assert.rejects(other.getFact(fact.id), (e) => e instanceof NotFoundError && e.code === "not_found");
  });
});
