/** examples/chat.ts runs against the live server as a user would run it, and says so when nothing answers. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { promisify } from "node:util";

import { live, subject } from "./live.js";

const CHAT = fileURLToPath(new URL("../examples/chat.js", import.meta.url));
const run = promisify(execFile);

test("the chat example sends the memory it wrote back in the next turns' prompts", async () => {
  const env = { ...process.env, HAKI_URL: live.url, HAKI_API_KEY: live.key, HAKI_PROJECT: live.project };
  const { stdout } = await run(process.execPath, [CHAT, subject("chloe")], { env });
  const turns = stdout.split(/^=== turn \d ===$/m).slice(1);
  assert.equal(turns.length, 3, stdout);
  assert.ok(!turns[0]!.includes("<haki_memory>"), turns[0]);
  assert.ok(turns[2]!.includes("- Chloé est végétarienne.") && turns[2]!.includes("<haki_memory>"), turns[2]);
  assert.match(stdout, /\+ remembered: Chloé habite à Lyon\./);
});

test("the chat example says the server could not be reached", async () => {
  const env = { ...process.env, HAKI_URL: "http://127.0.0.1:59", HAKI_API_KEY: "k" };
  const error = await run(process.execPath, [CHAT], { env }).catch((e) => e);
  assert.equal(error.code, 1);
  assert.match(error.stderr, /the hakimem server could not be reached at http:\/\/127\.0\.0\.1:59 \(ECONNREFUSED\); is `make run` serving there\?/);
});
