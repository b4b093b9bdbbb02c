/**
 * The example's turns against a live server, with the AI SDK's mock model in place of an LLM: the mock's scripted
 * tool calls run the real tools, so a `remember` writes a fact to hakimem and a later turn serves it, both in its
 * system prompt and through `recall`. tests/clients/test_typescript_client.py passes HAKI_URL, HAKI_API_KEY and
 * HAKI_PROJECT.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { MockLanguageModelV3 } from "ai/test";
import { Client } from "hakimem-client";

import { SYSTEM, chatTurn } from "../src/chat.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through tests/clients/test_typescript_client.py`);
  return value;
}

const haki = new Client({ baseUrl: required("HAKI_URL"), apiKey: required("HAKI_API_KEY"),
  projectId: required("HAKI_PROJECT") });

// The model interface's own types, read from the mock (the package that names them is only the SDK's dependency).
type ModelCall = MockLanguageModelV3["doGenerateCalls"][number];
type ModelResult = Awaited<ReturnType<MockLanguageModelV3["doGenerate"]>>;

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A model call that asks for one tool. */
function callTool(toolName: string, input: object): ModelResult {
  return {
    content: [{ type: "tool-call", toolCallId: `call-${toolName}`, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls", raw: undefined }, usage: USAGE, warnings: [],
  };
}

/** A model call that answers. */
function answer(text: string): ModelResult {
  return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: undefined }, usage: USAGE,
    warnings: [] };
}

/** What one model call was sent: its system prompt, and the output of each tool result in its messages. */
function sent(call: ModelCall | undefined) {
  assert.ok(call, "the model was not called");
  const system = call.prompt.find((message) => message.role === "system");
  const toolOutputs = call.prompt.flatMap((message) => message.role === "tool" ? message.content : [])
    .map((part) => part.type === "tool-result" ? part.output : part);
  const userTexts = call.prompt.flatMap((message) => message.role === "user" ? message.content : [])
    .map((part) => part.type === "text" ? part.text : "");
  return { system: system?.content, toolOutputs, userTexts };
}

test("a remember tool call writes a fact, and the next turn serves it in its prompt and through recall", async () => {
  // given a subject with no memory
  const subjectId = `ai-sdk-${randomUUID().slice(0, 8)}`;
  // when the model calls remember in the first turn
  const first = new MockLanguageModelV3({ doGenerate: [
    callTool("remember", { text: "Alice is allergic to peanuts.", category: "health" }), answer("Noted."),
  ] });
  const turn1 = await chatTurn({ model: first, haki, subjectId, message: "I'm allergic to peanuts, by the way." });
  // then the fact is in hakimem, the model saw the write's answer, and nothing was injected before it existed
  assert.equal(turn1.reply, "Noted.");
  const facts = (await haki.listFacts(subjectId)).items;
  assert.deepEqual(facts.map((fact) => [fact.text, fact.category, fact.kind]),
    [["Alice is allergic to peanuts.", "health", "fact"]]);
  assert.equal(sent(first.doGenerateCalls[0]).system, SYSTEM);
  assert.ok(turn1.packet.isEmpty);
  assert.deepEqual(sent(first.doGenerateCalls[1]).toolOutputs, [{ type: "json", value:
    { remembered: "Alice is allergic to peanuts.", id: facts[0]!.id, alreadyKnown: false } }]);

  // when the next turn asks about it, and the model calls recall
  const second = new MockLanguageModelV3({ doGenerate: [
    callTool("recall", { query: "What is Alice allergic to?" }), answer("Avoid peanuts."),
  ] });
  const turn2 = await chatTurn({ model: second, haki, subjectId, message: "What should I avoid eating?",
    history: turn1.messages });
  // then the system prompt carried the rendered packet, recall answered a block with the fact, and the history was sent
  assert.equal(turn2.reply, "Avoid peanuts.");
  const before = sent(second.doGenerateCalls[0]);
  assert.match(turn2.packet.render(), /^<haki_memory>[\s\S]*- Alice is allergic to peanuts\.[\s\S]*<\/haki_memory>$/);
  assert.equal(before.system, `${SYSTEM}\n\n${turn2.packet.render()}`);
  assert.deepEqual(before.userTexts, ["I'm allergic to peanuts, by the way.", "What should I avoid eating?"]);
  // (the first turn's remember came with the history)
  const [, recalled] = sent(second.doGenerateCalls[1]).toolOutputs;
  assert.equal(recalled?.type, "text");
  assert.match(String(recalled?.type === "text" && recalled.value),
    /^<haki_memory>[\s\S]*- Alice is allergic to peanuts\.[\s\S]*<\/haki_memory>$/);
  // and the packet's trace says which fact was served
  const trace = await haki.inspect(turn2.packet.trace_id);
  assert.ok(JSON.stringify(trace).includes(facts[0]!.id), JSON.stringify(trace));
});

test("a write the server refuses reaches the model as the tool's error, and the turn goes on", async () => {
  // given a subject with no memory
  const subjectId = `ai-sdk-${randomUUID().slice(0, 8)}`;
  // when the model asks to remember a blank text, which the server refuses
  const model = new MockLanguageModelV3({ doGenerate: [callTool("remember", { text: "   " }), answer("Sorry.")] });
  const turn = await chatTurn({ model, haki, subjectId, message: "Remember nothing." });
  // then the model read the server's code, the turn ended with its answer, and nothing was written
  assert.equal(turn.reply, "Sorry.");
  const [refused] = sent(model.doGenerateCalls[1]).toolOutputs;
  assert.equal(refused?.type, "error-text");
  assert.match(String(refused?.type === "error-text" && refused.value), /400 invalid_request/);
  assert.deepEqual((await haki.listFacts(subjectId)).items, []);
});

test("a recall on a subject with no memory says so rather than answering an empty block", async () => {
  const subjectId = `ai-sdk-${randomUUID().slice(0, 8)}`;
  const model = new MockLanguageModelV3({ doGenerate: [callTool("recall", { query: "Where does she live?" }),
    answer("I don't know yet.")] });
  await chatTurn({ model, haki, subjectId, message: "Where do I live?" });
  assert.deepEqual(sent(model.doGenerateCalls[1]).toolOutputs,
    [{ type: "text", value: "Nothing remembered about this." }]);
});

test("the terminal chat says the server could not be reached before it calls a model", async () => {
  // given no server at HAKI_URL / when a line is typed
  const main = fileURLToPath(new URL("../src/main.js", import.meta.url));
  const env = { ...process.env, HAKI_URL: "http://127.0.0.1:59", HAKI_API_KEY: "k", AI_GATEWAY_API_KEY: "" };
  const chat = spawnSync(process.execPath, [main, "alice"], { env, input: "Hello\n", encoding: "utf8" });
  // then it stops on hakimem's error, naming the URL, before any model call
  assert.equal(chat.status, 1, chat.stderr);
  assert.match(chat.stderr, /^hakimem: connection_error: the hakimem server could not be reached at http:\/\/127\.0\.0\.1:59/);
});
