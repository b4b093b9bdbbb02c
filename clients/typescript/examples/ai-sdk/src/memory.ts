/**
 * hakimem as the memory of a Vercel AI SDK chat, two ways that work together:
 * - `memoryPrompt`: before each turn, the context packet for the user's message, rendered into the system prompt
 *   (the model reads what matters without asking, and the server counted it in the budget);
 * - `memoryTools`: `recall` (a context call on a query the model chooses, answering the rendered block) and
 *   `remember` (a fact written for the subject), for what the turn's own packet did not hold and what the user
 *   said that should last.
 */
import { tool } from "ai";
import { type Client, type ContextPacket } from "hakimem-client";
import { z } from "zod";

/** Tokens of memory a block may take in the prompt: the server packs the most useful items within it. */
export const MEMORY_BUDGET = 300;

/** The system prompt for one turn, and the packet behind it (its trace_id explains every item served). */
export async function memoryPrompt(
  haki: Client, subjectId: string, message: string, system: string,
): Promise<{ system: string; packet: ContextPacket }> {
  const packet = await haki.context(subjectId, message, { budget_tokens: MEMORY_BUDGET });
  // An empty packet adds nothing: a block saying that nothing was found would only distract the model.
  return { system: packet.isEmpty ? system : `${system}\n\n${packet.render()}`, packet };
}

/** The tools of one subject's memory: the model never names the subject, so it cannot read another's. */
export function memoryTools(haki: Client, subjectId: string) {
  return {
    recall: tool({
      description: "Look up what you remember about the user that is relevant to a question.",
      inputSchema: z.object({ query: z.string().min(1).describe("what you want to know, as a question") }),
      execute: async ({ query }) => {
        const packet = await haki.context(subjectId, query, { budget_tokens: MEMORY_BUDGET });
        return packet.isEmpty ? "Nothing remembered about this." : packet.render();
      },
    }),
    remember: tool({
      description: "Remember a lasting fact about the user (who they are, what they like, what they need). " +
        "One fact per call, as a sentence about the user.",
      inputSchema: z.object({
        text: z.string().min(1).describe("the fact, e.g. 'Alice is allergic to peanuts.'"),
        category: z.string().max(64).optional().describe("a topic such as health, food, work"),
        kind: z.enum(["fact", "preference"]).optional(),
      }),
      execute: async ({ text, category, kind }) => {
        const fact = await haki.writeFact(subjectId, text, { category: category ?? "", kind: kind ?? "fact" });
        return { remembered: fact.text, id: fact.id, alreadyKnown: fact.deduplicated };
      },
    }),
  };
}
