/**
 * A chat fed through hakimem, without an LLM: before each reply it fetches the context for the user's message and
 * prints the prompt that would be sent to the model; after each exchange it stores what was learned (facts) and
 * the exchange itself (an episode). The replies and the facts "extracted" from each turn are scripted here, where a
 * real application would call its LLM for both.
 *
 *     make run      # in another terminal: serves on 127.0.0.1:$HAKI_PORT (8000), writes var/dev_api_key
 *     cd clients/typescript && npm ci && npm run build
 *     HAKI_API_KEY=$(cat ../../var/dev_api_key) node dist/examples/chat.js    # HAKI_URL: another server
 */
import { Client, HakimemError, type NewFact } from "hakimem-client";

const SYSTEM = "You are a helpful assistant. Use the memory below when it is relevant; never mention it otherwise.";

// (user message, scripted reply, facts an extractor would draw from the exchange)
const SCRIPT: [string, string, Omit<NewFact, "subject_id">[]][] = [
  ["Salut ! Je m'appelle Chloé, je viens d'emménager à Lyon.", "Bienvenue à Lyon, Chloé !",
    [{ text: "Chloé habite à Lyon.", category: "home" }]],
  ["Je suis végétarienne et je déteste les champignons.", "Noté : un curry de pois chiches, sans champignons ?",
    [{ text: "Chloé est végétarienne.", category: "food", kind: "preference" },
      { text: "Chloé déteste les champignons.", category: "food", kind: "preference" }]],
  ["Que me conseilles-tu pour le dîner de samedi ?", "Des lasagnes aux légumes rôtis.", []],
];

async function main(subject: string): Promise<void> {
  const haki = new Client({ projectId: process.env.HAKI_PROJECT ?? "demo" });
  await haki.eraseSubject(subject); // each run starts from a blank memory
  const start = Date.now();
  for (const [turn, [message, reply, learned]] of SCRIPT.entries()) {
    console.log(`=== turn ${turn + 1} ===\nuser: ${message}`);
    // Before the reply: what does memory hold that matters for this message?
    const packet = await haki.context(subject, message, { budget_tokens: 300 });
    const memory = packet.render();
    console.log(`--- sent to the LLM (trace ${packet.trace_id}, ${packet.used_tokens} memory tokens) ---`);
    console.log(`[system]\n${memory ? `${SYSTEM}\n\n${memory}` : SYSTEM}\n[user]\n${message}`);
    console.log(`--- reply (scripted) ---\nassistant: ${reply}`);
    // After the exchange: the durable facts in one batch, and the exchange itself as an episode.
    for (const fact of await haki.writeFacts(learned.map((f) => ({ ...f, subject_id: subject })))) {
      console.log(`+ remembered: ${fact.text}${fact.deduplicated ? " (already known)" : ""}`);
    }
    await haki.writeEvent(subject, `User: ${message} / Assistant: ${reply}`, new Date(start + turn * 1000));
    console.log();
  }
}

main(process.argv[2] ?? "chat-ts-chloe").catch((error: unknown) => {
  if (error instanceof HakimemError && error.code === "connection_error") {
    console.error(`${error.message}; is \`make run\` serving there? (HAKI_URL says where)`);
  } else {
    console.error(error instanceof HakimemError ? `hakimem refused: ${error.message}` : String(error));
  }
  process.exitCode = 1;
});
