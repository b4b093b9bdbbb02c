/**
 * Typed errors built from the server's error contract:
 *
 *     {"error": {"code": "<stable machine code>", "message": "...", "details": {...}}}
 *
 * Catch `HakimemError` for everything, or a subclass for one kind of failure; `code` is the server's machine
 * code (`invalid_request`, `budget_exceeded`, `not_found`, ...), stable across releases.
 */
import type { components } from "./schema.js";

/** The server's codes, and the two the client gives itself: `connection_error` (nothing answered) and
 * `unexpected_response` (an answer outside the contract, such as a proxy's HTML page). A newer server's code is
 * still a string. */
export type ErrorCode = components["schemas"]["CodeEnum"] | "connection_error" | "unexpected_response" | (string & {});

export class HakimemError extends Error {
  readonly code: ErrorCode;
  /** The HTTP status; null when the server could not be reached. */
  readonly status: number | null;
  readonly details: Record<string, unknown>;
  /** Seconds the server asked to wait (`Retry-After`) on its last answer, when it said. */
  readonly retryAfter: number | null;

  constructor(code: ErrorCode, message: string, options: ErrorOptions & {
    status?: number | null; details?: Record<string, unknown>; retryAfter?: number | null;
  } = {}) {
    const status = options.status ?? null;
    super(status === null ? `${code}: ${message}` : `${status} ${code}: ${message}`, { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.details = options.details ?? {};
    this.retryAfter = options.retryAfter ?? null;
  }
}

/** 400: the request was refused as it stands (invalid_request, budget_exceeded); nothing was written.
 * `details.errors` lists {index, field, message} for validation errors. */
export class InvalidRequestError extends HakimemError {}
/** 401: no key, or an unknown or revoked one. */
export class UnauthenticatedError extends HakimemError {}
/** 403 (permission_denied, consent_missing). */
export class PermissionDeniedError extends HakimemError {}
/** 404: no such object, or one in another project than the key's (the server does not tell which). */
export class NotFoundError extends HakimemError {}
/** 409: the object is not in a state that allows this (conflict_not_open, fact_not_active, procedure_not_active). */
export class ConflictStateError extends HakimemError {}
/** 429, still refused after the retries; `retryAfter` is the server's last Retry-After, in seconds. */
export class RateLimitedError extends HakimemError {}
/** 503 (embedder_unavailable, database_unavailable), still refused after the retries, or the server could not be
 * reached at all (code `connection_error`, status null). */
export class UnavailableError extends HakimemError {}
/** Any other 5xx (internal_error). */
export class ServerError extends HakimemError {}

const BY_STATUS: Record<number, typeof HakimemError> = {
  400: InvalidRequestError,
  401: UnauthenticatedError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictStateError,
  429: RateLimitedError,
  503: UnavailableError,
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The error for an answer outside 2xx. A body outside the contract still gives an error of the right class. */
export function errorFromResponse(status: number, body: unknown, retryAfter: number | null = null): HakimemError {
  const error = isObject(body) ? body.error : undefined;
  let code: string, message: string, details: Record<string, unknown>;
  if (isObject(error) && typeof error.code === "string") {
    code = error.code;
    message = String(error.message ?? "");
    details = isObject(error.details) ? error.details : {};
  } else {
    [code, message, details] = ["unexpected_response", `HTTP ${status} without the error contract's body`, {}];
  }
  const ErrorClass = BY_STATUS[status] ?? (status >= 500 ? ServerError : HakimemError);
  return new ErrorClass(code, message, { status, details, retryAfter });
}
