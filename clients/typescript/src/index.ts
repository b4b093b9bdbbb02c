/** TypeScript client for hakimem, the memory service for LLM applications. */
export * from "./client.js";
export * from "./errors.js";
export { parseRetryAfter } from "./retry.js";
export type { components, operations, paths } from "./schema.js";
