/**
 * One turn of a chat with memory: the packet for the user's message goes into the system prompt, and the model may
 * call `recall` and `remember` before it answers. The model is any AI SDK model: a provider's (`openai("...")` from
 * @ai-sdk/openai), a gateway id such as "openai/gpt-5-mini", or the SDK's mock in the tests.
 */
import { generateText, stepCountIs, type LanguageModel, type ModelMessage } from "ai";
import { type Client, type ContextPacket } from "hakimem-client";

import { memoryPrompt, memoryTools } from "./memory.js";

export const SYSTEM = "You are a helpful assistant. Use the memory below when it is relevant; never mention it " +
  "otherwise. When the user tells you something lasting about themselves, remember it.";
/** Model calls a turn may make: tool calls, then the answer. */
export const MAX_STEPS = 4;

export interface Turn {
  reply: string;
  /** The conversation so far, this turn's user message, tool calls and answer included: pass it to the next turn. */
  messages: ModelMessage[];
  /** The packet injected into the system prompt (its trace_id for GET /v1/inspect). */
  packet: ContextPacket;
}

export async function chatTurn(options: {
  model: LanguageModel;
  haki: Client;
  subjectId: string;
  message: string;
  history?: ModelMessage[];
}): Promise<Turn> {
  const { model, haki, subjectId, message, history = [] } = options;
  const { system, packet } = await memoryPrompt(haki, subjectId, message, SYSTEM);
  const messages: ModelMessage[] = [...history, { role: "user", content: message }];
  const result = await generateText({
    model, system, messages, tools: memoryTools(haki, subjectId), stopWhen: stepCountIs(MAX_STEPS),
  });
  return { reply: result.text, messages: [...messages, ...result.response.messages], packet };
}
