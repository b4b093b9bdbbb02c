/**
 * When to try a call again. An answer 429 or 503 is retried after the server's `Retry-After` (seconds or an HTTP
 * date), or else after an exponential backoff with jitter, at most `maxRetries` times; a `Retry-After` longer than
 * `maxBackoffMs` is not waited for (the error is raised at once, carrying `retryAfter`). Both statuses mean the
 * server did nothing (throttled before the view; a 503 write answers "nothing was written"), so every call may be
 * retried on them. A connection that could not be opened is retried for every call too (the request never left);
 * a connection lost after the request was sent only for calls that are safe to repeat (reads, deletes, context),
 * since a write may have been applied.
 */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

// The connection was never opened: the request cannot have reached the server.
const NEVER_SENT = new Set([
  "ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT",
]);

/** Seconds to wait from a Retry-After header: a number of seconds, or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | null {
  if (!value || !value.trim()) return null;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const when = Date.parse(text);
  return Number.isNaN(when) ? null : Math.max(0, (when - now) / 1000);
}

/** The code of the system error behind a failed fetch (undici puts it on `cause`, sometimes one level deeper). */
export function transportCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 3 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export class RetryPolicy {
  readonly maxRetries: number;

  constructor(maxRetries: number, readonly backoffMs: number, readonly maxBackoffMs: number) {
    this.maxRetries = Math.max(0, maxRetries);
  }

  private backoff(attempt: number): number {
    const ceiling = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  /** Milliseconds to wait before the next attempt, or null to give up and raise. */
  delayForResponse(attempt: number, status: number, retryAfter: number | null): number | null {
    if (!RETRY_STATUSES.has(status) || attempt >= this.maxRetries) return null;
    if (retryAfter === null) return this.backoff(attempt);
    return retryAfter * 1000 <= this.maxBackoffMs ? retryAfter * 1000 : null;
  }

  delayForError(attempt: number, error: unknown, idempotent: boolean): number | null {
    if (attempt >= this.maxRetries) return null;
    const neverSent = NEVER_SENT.has(transportCode(error) ?? "");
    return neverSent || idempotent ? this.backoff(attempt) : null;
  }
}
