/**
 * A chat in the terminal with a real model and hakimem's memory: each line you type is a turn.
 *
 *     make run      # in another terminal: serves on 127.0.0.1:$HAKI_PORT (8000), writes var/dev_api_key
 *     cd clients/typescript && npm ci && npm run build && cd examples/ai-sdk && npm ci && npm run build
 *     AI_GATEWAY_API_KEY=... HAKI_API_KEY=$(cat ../../../../var/dev_api_key) node dist/src/main.js alice
 *
 * AI_MODEL names the model (default openai/gpt-5-mini, through the AI SDK's gateway); to call a provider directly,
 * install its package (@ai-sdk/openai, @ai-sdk/anthropic, ...) and pass its model to chatTurn instead.
 */
import { createInterface } from "node:readline/promises";
import { type ModelMessage } from "ai";
import { Client, HakimemError } from "hakimem-client";

import { chatTurn } from "./chat.js";

async function main(subjectId: string): Promise<void> {
  const haki = new Client({ projectId: process.env.HAKI_PROJECT ?? "demo" });
  const model = process.env.AI_MODEL ?? "openai/gpt-5-mini";
  const terminal = createInterface({ input: process.stdin, output: process.stdout });
  let history: ModelMessage[] = [];
  for (;;) {
    const message = (await terminal.question("you: ").catch(() => "")).trim();
    if (!message) break; // an empty line or end of input ends the chat
    const turn = await chatTurn({ model, haki, subjectId, message, history });
    console.log(`assistant: ${turn.reply}\n(memory served: trace ${turn.packet.trace_id})`);
    history = turn.messages;
  }
  terminal.close();
}

main(process.argv[2] ?? "ai-sdk-demo").catch((error: unknown) => {
  console.error(error instanceof HakimemError ? `hakimem: ${error.message}` : String(error));
  process.exitCode = 1;
});
