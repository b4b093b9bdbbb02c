/**
 * `Client`: one method per operation of hakimem's REST API, on the global `fetch` (Node 20+). The answers are the
 * server's JSON, typed by the types generated from its OpenAPI schema (src/schema.ts), except a context packet,
 * which also has `render()`.
 *
 * Options of a call take the API's own field names (`budget_tokens`, `valid_from`, `project_id`); the client's own
 * knobs are camelCase (`baseUrl`, `apiKey`, `projectId`, `batchSize`).
 */
import { HakimemError, UnavailableError, errorFromResponse } from "./errors.js";
import { RetryPolicy, parseRetryAfter, transportCode } from "./retry.js";
import type { components, operations } from "./schema.js";

export const VERSION = "0.1.0";
/** The server's largest batch (all-or-nothing per request). */
export const MAX_BATCH = 500;
/** The server's default HAKI_WRITE_JOB_CHARS: a batch of facts with more characters of text is accepted as a job
 * (202), so writeFacts keeps each request under it and is answered with the facts. */
export const LIGHT_BATCH_CHARS = 100_000;
const DEFAULT_PORT = "8000";

type Schemas = components["schemas"];
type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;
/** A moment: an ISO 8601 string with its timezone, or a Date (sent as UTC). */
export type Moment = string | Date;
type MomentKeys = "valid_from" | "valid_to" | "occurred_at" | "recorded_after" | "recorded_before" |
  "occurred_after" | "occurred_before" | "since" | "until";
/** A request type whose moments may also be given as Dates. */
type WithMoments<T> = { [K in keyof T]: K extends MomentKeys ? T[K] | Date : T[K] };
/** `project_id` is the client's unless a call names another. */
type Scoped<T> = Omit<WithMoments<T>, "project_id"> & { project_id?: string };

export type Fact = Schemas["FactOut"];
/** A fact as a write answers it: also whether it was a duplicate and the conflict set it opened or joined. */
export type FactWritten = Schemas["FactWritten"];
export type WriteJob = Schemas["FactWriteJob"];
export type Event = Schemas["EventOut"];
export type IdentityBlock = Schemas["IdentityBlockOut"];
export type Procedure = Schemas["ProcedureOut"];
export type Conflict = Schemas["ConflictOut"];
export type ConflictDetail = Schemas["ConflictDetail"];
export type Inspection = Schemas["Inspection"];
export type Erased = Schemas["Erased"];
export type Consent = Schemas["ConsentOut"];
export type Consents = Schemas["Consents"];
export type ConsentRevoked = Schemas["ConsentRevoked"];
export type Project = Schemas["ProjectOut"];
export type Overview = Schemas["Overview"];
export type Health = Schemas["Health"];
export type Liveness = Schemas["Liveness"];
export type Readiness = Schemas["Readiness"];
export type Replay = Omit<Schemas["Replay"], "packet"> & { packet: ContextPacket };

export type NewFact = Scoped<Schemas["FactInRequest"]>;
export type NewEvent = Scoped<Schemas["EventInRequest"]>;
export type FactOptions = Omit<NewFact, "subject_id" | "text">;
export type FactChanges = WithMoments<Schemas["PatchedFactPatchRequest"]>;
export type FactFilters = Scoped<Omit<Query<"facts_list">, "subject_id">>;
export type EventFilters = Scoped<Omit<Query<"events_list">, "subject_id">>;
export type IdentityBlockOptions = Omit<Scoped<Schemas["IdentityBlockInRequest"]>, "subject_id" | "name" | "text">;
export type IdentityBlockChanges = Schemas["PatchedIdentityBlockPatchRequest"];
export type ProcedureOptions = Omit<Scoped<Schemas["ProcedureInRequest"]>, "subject_id" | "title" | "text">;
export type ProcedureFilters = Scoped<Omit<Query<"procedures_list">, "subject_id">>;
export type ProcedureChanges = Schemas["PatchedProcedurePatchRequest"];
export type ContextOptions = Omit<Scoped<Schemas["ContextRequestSchemaRequest"]>, "subject_id" | "query">;
export type ReplayOptions = Schemas["ReplayRequestRequest"];
export type ConflictFilters = Scoped<Query<"conflicts_list">>;
export type ConflictResolution = Schemas["ConflictResolveRequest"];
export type ProjectChanges = Schemas["PatchedProjectPatchRequest"];
export type OverviewPeriod = Scoped<Query<"stats_overview_retrieve">>;
/** Only `project_id`: the scope of a call that takes nothing else. */
export type InProject = { project_id?: string };

/** One keyset page of a list; pass `nextCursor` back as `cursor` for the next (null: this was the last). */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface ContextPacket extends Readonly<Schemas["ContextPacket"]> {}
/** What `POST /v1/context` served for one LLM turn: the server's JSON as it is, with `render()`. */
export class ContextPacket {
  constructor(body: Schemas["ContextPacket"]) {
    Object.assign(this, body);
  }

  /** The prompt block: `rendered`, or "" for an empty packet (a block saying nothing was found would only distract
   * the model). The server renders it once, so that what the budget counted is what the model reads. */
  render(): string {
    return this.rendered;
  }

  get isEmpty(): boolean {
    return !this.rendered;
  }

  toString(): string {
    return this.render();
  }
}

export interface ClientOptions {
  /** Default: $HAKI_URL, else http://127.0.0.1:$HAKI_PORT (8000), where `make run` serves. */
  baseUrl?: string;
  /** Default: $HAKI_API_KEY. */
  apiKey?: string;
  /** The default scope of every call (a key belongs to one project); a call's `project_id` overrides it. */
  projectId?: string;
  /** Per attempt; default 30 s. */
  timeoutMs?: number;
  /** Default 3. */
  maxRetries?: number;
  /** The first backoff's ceiling, doubled at each retry; default 500 ms. */
  backoffMs?: number;
  /** No wait longer than this, whether a backoff or the server's Retry-After; default 30 s. */
  maxBackoffMs?: number;
  /** A fetch of your own (a proxy's agent, instrumentation); default the global one. */
  fetch?: typeof fetch;
}

interface Call<T> {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  parse: (body: any) => T;
  query?: Record<string, unknown>;
  body?: unknown;
  /** Safe to send again after a connection lost mid-call: it changes nothing more the second time. */
  idempotent?: boolean;
  /** Statuses that are answers, not errors, and not retried, when their body is a report rather than the error
   * contract (readiness answers 503 with its report; a database outage answers 503 database_unavailable). */
  answers?: readonly number[];
}

function isReport(body: unknown): boolean {
  return typeof body === "object" && body !== null && !("error" in body);
}

function env(name: string): string | undefined {
  const value = typeof process === "undefined" ? undefined : process.env[name];
  return value || undefined;
}

function defaultBaseUrl(): string {
  return env("HAKI_URL") ?? `http://127.0.0.1:${env("HAKI_PORT") ?? DEFAULT_PORT}`;
}

function id(value: string): string {
  return encodeURIComponent(value);
}

function queryString(query: Record<string, unknown> | undefined): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    params.append(key, value instanceof Date ? value.toISOString() : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += size) out.push(items.slice(start, start + size));
  return out;
}

/** Requests of at most `size` facts and LIGHT_BATCH_CHARS characters of text (a fact longer alone goes alone). */
function factChunks<T extends { text: string }>(facts: T[], size: number): T[][] {
  const out: T[][] = [];
  let chunk: T[] = [];
  let chars = 0;
  for (const fact of facts) {
    if (chunk.length && (chunk.length === size || chars + fact.text.length > LIGHT_BATCH_CHARS)) {
      out.push(chunk);
      chunk = [];
      chars = 0;
    }
    chunk.push(fact);
    chars += fact.text.length;
  }
  if (chunk.length) out.push(chunk);
  return out;
}

function batchOf(size: number | undefined): number {
  return Math.max(1, Math.min(size ?? MAX_BATCH, MAX_BATCH));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The client. Every call is scoped to `projectId` unless it names another `project_id`.
 *
 *     const haki = new Client({ projectId: "demo" });   // $HAKI_URL, $HAKI_API_KEY
 *     const packet = await haki.context("alice", "What should Alice avoid eating?");
 *     prompt = packet.render();
 */
export class Client {
  readonly baseUrl: string;
  readonly projectId: string | undefined;
  readonly #headers: Record<string, string>;
  readonly #retry: RetryPolicy;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? defaultBaseUrl()).replace(/\/+$/, "");
    const apiKey = options.apiKey ?? env("HAKI_API_KEY");
    if (!apiKey) throw new Error("no API key: pass apiKey, or set HAKI_API_KEY");
    this.projectId = options.projectId;
    this.#headers = {
      Authorization: `Bearer ${apiKey}`,
      Accept: "application/json",
      "User-Agent": `hakimem-client-ts/${VERSION}`,
    };
    this.#retry = new RetryPolicy(options.maxRetries ?? 3, options.backoffMs ?? 500, options.maxBackoffMs ?? 30_000);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  #project(projectId: string | undefined): string {
    const project = projectId ?? this.projectId;
    if (!project) throw new Error("project_id is required: give projectId to the client or project_id to the call");
    return project;
  }

  async #send<T>(call: Call<T>): Promise<T> {
    const url = this.baseUrl + call.path + queryString(call.query);
    const headers = call.body === undefined ? this.#headers : { ...this.#headers, "Content-Type": "application/json" };
    const payload = call.body === undefined ? undefined : JSON.stringify(call.body);
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.#fetch(url, {
          method: call.method, headers, body: payload, signal: AbortSignal.timeout(this.#timeoutMs),
        });
      } catch (error) {
        const delay = this.#retry.delayForError(attempt, error, call.idempotent ?? false);
        if (delay === null) throw this.#unreachable(error);
        await sleep(delay);
        continue;
      }
      const text = await response.text();
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      if (response.ok || (call.answers?.includes(response.status) && isReport(body))) return call.parse(body);
      const retryAfter = parseRetryAfter(response.headers.get("Retry-After"));
      const delay = this.#retry.delayForResponse(attempt, response.status, retryAfter);
      if (delay === null) throw errorFromResponse(response.status, body, retryAfter);
      await sleep(delay);
    }
  }

  #unreachable(error: unknown): HakimemError {
    const timedOut = error instanceof Error && error.name === "TimeoutError";
    const reason = timedOut ? `no answer within ${this.#timeoutMs} ms` : (transportCode(error) ?? String(error));
    return new UnavailableError("connection_error", `the hakimem server could not be reached at ${this.baseUrl} (${reason})`, {
      status: null, cause: error,
    });
  }

  #page<T>(key: string): (body: any) => Page<T> {
    return (body) => ({ items: body[key], nextCursor: body.next_cursor });
  }

  // --- facts -----------------------------------------------------------------------------------------------

  /** One fact. The answer says whether it was a duplicate (`deduplicated`) or opened a conflict set. */
  async writeFact(subjectId: string, text: string, options: FactOptions = {}): Promise<FactWritten> {
    const [written] = await this.writeFacts([{ ...options, subject_id: subjectId, text }], { project_id: options.project_id });
    return written!;
  }

  /** Many facts, in requests of up to `batchSize` (at most 500) and 100,000 characters of text (the server writes a
   * heavier batch as a job); each request is all-or-nothing, so on an error the batches before it are written and
   * the rest are not. */
  async writeFacts(facts: NewFact[], options: InProject & { batchSize?: number } = {}): Promise<FactWritten[]> {
    const written: FactWritten[] = [];
    for (const chunk of factChunks(facts, batchOf(options.batchSize))) {
      const items = chunk.map((fact) => ({ ...fact, project_id: this.#project(fact.project_id ?? options.project_id) }));
      written.push(...await this.#send({
        method: "POST", path: "/v1/facts", body: { facts: items }, parse: (b: Schemas["FactBatchOut"]) => b.facts,
      }));
    }
    return written;
  }

  /** Filters: status, category, kind, recorded_after, recorded_before, limit (1-200), cursor. */
  listFacts(subjectId: string, filters: FactFilters = {}): Promise<Page<Fact>> {
    const query = { ...filters, project_id: this.#project(filters.project_id), subject_id: subjectId };
    return this.#send({ method: "GET", path: "/v1/facts", query, parse: this.#page<Fact>("facts"), idempotent: true });
  }

  /** Every fact matching the filters, following the pages. */
  async *iterFacts(subjectId: string, filters: FactFilters = {}): AsyncGenerator<Fact> {
    let cursor = filters.cursor;
    do {
      const page = await this.listFacts(subjectId, { ...filters, cursor });
      yield* page.items;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  /** A heavy batch's write job (a batch sent by other means than writeFacts): pending, done with its facts' ids,
   * or failed with the error. */
  getJob(jobId: string): Promise<WriteJob> {
    return this.#send({ method: "GET", path: `/v1/jobs/${id(jobId)}`, parse: (b: WriteJob) => b, idempotent: true });
  }

  getFact(factId: string): Promise<Fact> {
    return this.#send({ method: "GET", path: `/v1/facts/${id(factId)}`, parse: (b: Fact) => b, idempotent: true });
  }

  /** Changes: text (makes a new version, the old one superseded), category, importance, volatility, valid_to,
   * metadata (edited in place). Returns the fact as it now stands (the new version for text). */
  updateFact(factId: string, changes: FactChanges): Promise<FactWritten> {
    return this.#send({ method: "PATCH", path: `/v1/facts/${id(factId)}`, body: changes, parse: (b: FactWritten) => b });
  }

  /** Retracting twice is harmless on the server: safe to repeat. */
  retractFact(factId: string): Promise<Fact> {
    return this.#send({ method: "DELETE", path: `/v1/facts/${id(factId)}`, parse: (b: Fact) => b, idempotent: true });
  }

  /** The version chain, oldest first. */
  factHistory(factId: string): Promise<Fact[]> {
    return this.#send({
      method: "GET", path: `/v1/facts/${id(factId)}/history`, parse: (b: Schemas["FactHistory"]) => b.versions,
      idempotent: true,
    });
  }

  // --- events ----------------------------------------------------------------------------------------------

  async writeEvent(subjectId: string, text: string, occurredAt: Moment,
    options: InProject & { metadata?: Record<string, unknown> } = {}): Promise<Event> {
    const [written] = await this.writeEvents(
      [{ subject_id: subjectId, text, occurred_at: occurredAt, metadata: options.metadata }], { project_id: options.project_id });
    return written!;
  }

  /** Many events, in requests of up to `batchSize` (at most 500), each all-or-nothing. */
  async writeEvents(events: NewEvent[], options: InProject & { batchSize?: number } = {}): Promise<Event[]> {
    const written: Event[] = [];
    for (const chunk of chunks(events, batchOf(options.batchSize))) {
      const items = chunk.map((event) => ({ ...event, project_id: this.#project(event.project_id ?? options.project_id) }));
      written.push(...await this.#send({
        method: "POST", path: "/v1/events", body: { events: items }, parse: (b: Schemas["EventBatchOut"]) => b.events,
      }));
    }
    return written;
  }

  /** Newest first. Filters: occurred_after, occurred_before, limit, cursor. */
  listEvents(subjectId: string, filters: EventFilters = {}): Promise<Page<Event>> {
    const query = { ...filters, project_id: this.#project(filters.project_id), subject_id: subjectId };
    return this.#send({ method: "GET", path: "/v1/events", query, parse: this.#page<Event>("events"), idempotent: true });
  }

  /** One event, with the status of its fact extraction when the server extracts. */
  getEvent(eventId: string): Promise<Event> {
    return this.#send({ method: "GET", path: `/v1/events/${id(eventId)}`, parse: (b: Event) => b, idempotent: true });
  }

  // --- identity blocks and procedures (subjectId null: the whole project's) --------------------------------

  /** Options: position, enabled, metadata. */
  createIdentityBlock(subjectId: string | null, name: string, text: string,
    options: IdentityBlockOptions = {}): Promise<IdentityBlock> {
    const body = { ...options, project_id: this.#project(options.project_id), subject_id: subjectId, name, text };
    return this.#send({ method: "POST", path: "/v1/identity-blocks", body, parse: (b: IdentityBlock) => b });
  }

  /** The project's blocks and, with a subject, the subject's own after them, in serving order. */
  listIdentityBlocks(subjectId: string | null = null, options: InProject = {}): Promise<IdentityBlock[]> {
    const query = { project_id: this.#project(options.project_id), subject_id: subjectId };
    return this.#send({
      method: "GET", path: "/v1/identity-blocks", query,
      parse: (b: Schemas["IdentityBlockList"]) => b.identity_blocks, idempotent: true,
    });
  }

  getIdentityBlock(blockId: string): Promise<IdentityBlock> {
    return this.#send({
      method: "GET", path: `/v1/identity-blocks/${id(blockId)}`, parse: (b: IdentityBlock) => b, idempotent: true,
    });
  }

  /** Changes: name, text, position, enabled, metadata. */
  updateIdentityBlock(blockId: string, changes: IdentityBlockChanges): Promise<IdentityBlock> {
    return this.#send({
      method: "PATCH", path: `/v1/identity-blocks/${id(blockId)}`, body: changes, parse: (b: IdentityBlock) => b,
    });
  }

  /** A second delete answers 404 (NotFoundError) after the first did its work: retried on a lost connection. */
  deleteIdentityBlock(blockId: string): Promise<void> {
    return this.#send({
      method: "DELETE", path: `/v1/identity-blocks/${id(blockId)}`, parse: () => undefined, idempotent: true,
    });
  }

  /** Options: category, importance, metadata. */
  writeProcedure(subjectId: string | null, title: string, text: string,
    options: ProcedureOptions = {}): Promise<Procedure> {
    const body = { ...options, project_id: this.#project(options.project_id), subject_id: subjectId, title, text };
    return this.#send({ method: "POST", path: "/v1/procedures", body, parse: (b: Procedure) => b });
  }

  /** The project's procedures and, with a subject, the subject's own, newest first. Filters: status, category,
   * limit (1-200), cursor. */
  listProcedures(subjectId: string | null = null, filters: ProcedureFilters = {}): Promise<Page<Procedure>> {
    const query = { ...filters, project_id: this.#project(filters.project_id), subject_id: subjectId };
    return this.#send({
      method: "GET", path: "/v1/procedures", query, parse: this.#page<Procedure>("procedures"), idempotent: true,
    });
  }

  getProcedure(procedureId: string): Promise<Procedure> {
    return this.#send({
      method: "GET", path: `/v1/procedures/${id(procedureId)}`, parse: (b: Procedure) => b, idempotent: true,
    });
  }

  /** Changes: title, text (embedded again), category, importance, metadata. */
  updateProcedure(procedureId: string, changes: ProcedureChanges): Promise<Procedure> {
    return this.#send({
      method: "PATCH", path: `/v1/procedures/${id(procedureId)}`, body: changes, parse: (b: Procedure) => b,
    });
  }

  /** Retracting twice is harmless on the server: safe to repeat. A retracted procedure can no longer be updated
   * (409 procedure_not_active). */
  retractProcedure(procedureId: string): Promise<Procedure> {
    return this.#send({
      method: "DELETE", path: `/v1/procedures/${id(procedureId)}`, parse: (b: Procedure) => b, idempotent: true,
    });
  }

  // --- context and traces ----------------------------------------------------------------------------------

  /** The packet for one LLM turn. Options left out are not sent: a plain call. `tiers: true` (or `tier_budgets`)
   * asks for identity blocks, preferences, facts, episodes and procedures, each under its own budget, rendered in
   * five sections. */
  context(subjectId: string, query: string, options: ContextOptions = {}): Promise<ContextPacket> {
    const body = { ...options, project_id: this.#project(options.project_id), subject_id: subjectId, query };
    // It only reads memory and writes its own trace: repeating it is safe.
    return this.#send({
      method: "POST", path: "/v1/context", body, parse: (b: Schemas["ContextPacket"]) => new ContextPacket(b),
      idempotent: true,
    });
  }

  /** The trace behind a packet: the request, the packet, timings per phase and every decision. */
  inspect(traceId: string): Promise<Inspection> {
    return this.#send({ method: "GET", path: `/v1/inspect/${id(traceId)}`, parse: (b: Inspection) => b, idempotent: true });
  }

  /** The traced call run again (`as_of` "now", the default, or "original": the memory as it was), under optional
   * overrides, with the diff against the original. Not retried on a lost connection: each replay writes a trace. */
  replay(traceId: string, options: ReplayOptions = {}): Promise<Replay> {
    return this.#send({
      method: "POST", path: `/v1/inspect/${id(traceId)}/replay`, body: options,
      parse: (b: Schemas["Replay"]) => ({ ...b, packet: new ContextPacket(b.packet) }),
    });
  }

  // --- conflicts, erasure and consent ----------------------------------------------------------------------

  /** Filters: subject_id, status, limit, cursor. */
  listConflicts(filters: ConflictFilters = {}): Promise<Page<Conflict>> {
    const query = { ...filters, project_id: this.#project(filters.project_id) };
    return this.#send({
      method: "GET", path: "/v1/conflicts", query, parse: this.#page<Conflict>("conflicts"), idempotent: true,
    });
  }

  getConflict(conflictId: string): Promise<ConflictDetail> {
    return this.#send({
      method: "GET", path: `/v1/conflicts/${id(conflictId)}`, parse: (b: ConflictDetail) => b, idempotent: true,
    });
  }

  /** Keep some facts (the others are superseded by the first kept), or dismiss the set (all stay). */
  resolveConflict(conflictId: string, resolution: ConflictResolution): Promise<ConflictDetail> {
    return this.#send({
      method: "POST", path: `/v1/conflicts/${id(conflictId)}/resolve`, body: resolution,
      parse: (b: ConflictDetail) => b,
    });
  }

  /** Deletes the whole scope (facts, events, conflict sets, traces) and returns the rows deleted per table. */
  eraseSubject(subjectId: string, options: InProject = {}): Promise<Erased> {
    return this.#send({
      method: "DELETE", path: `/v1/subjects/${id(subjectId)}`, query: { project_id: this.#project(options.project_id) },
      parse: (b: Erased) => b, idempotent: true,
    });
  }

  /** The categories consented to now and every grant and revocation, oldest first. */
  listConsents(subjectId: string, options: InProject = {}): Promise<Consents> {
    return this.#send({
      method: "GET", path: `/v1/subjects/${id(subjectId)}/consents`,
      query: { project_id: this.#project(options.project_id) }, parse: (b: Consents) => b, idempotent: true,
    });
  }

  /** Grants one category; granting one already granted answers the standing grant. */
  grantConsent(subjectId: string, category: string, options: InProject = {}): Promise<Consent> {
    return this.#send({
      method: "POST", path: `/v1/subjects/${id(subjectId)}/consents`,
      body: { project_id: this.#project(options.project_id), category }, parse: (b: Consent) => b,
    });
  }

  /** Revokes from the next call on; `erase: true` also deletes the category's facts, the traces naming them and
   * their conflict sets, and returns the counts. */
  revokeConsent(subjectId: string, category: string, options: InProject & { erase?: boolean } = {}): Promise<ConsentRevoked> {
    const query = { project_id: this.#project(options.project_id), erase: options.erase ? "true" : undefined };
    return this.#send({
      method: "DELETE", path: `/v1/subjects/${id(subjectId)}/consents/${id(category)}`, query,
      parse: (b: ConsentRevoked) => b, idempotent: true,
    });
  }

  // --- the project, its figures and the server's health ----------------------------------------------------

  /** The key's project settings: consent_required, consent_write_policy, categories, conflict_policy. */
  getProject(): Promise<Project> {
    return this.#send({ method: "GET", path: "/v1/project", parse: (b: Project) => b, idempotent: true });
  }

  updateProject(changes: ProjectChanges): Promise<Project> {
    return this.#send({ method: "PATCH", path: "/v1/project", body: changes, parse: (b: Project) => b });
  }

  /** How the project's context calls used memory in [since, until) (default: the last 30 days). */
  statsOverview(period: OverviewPeriod = {}): Promise<Overview> {
    const query = { ...period, project_id: this.#project(period.project_id) };
    return this.#send({ method: "GET", path: "/v1/stats/overview", query, parse: (b: Overview) => b, idempotent: true });
  }

  /** The database, its vector extension and the embedder; like `healthReady`, a 503's report is returned. */
  health(): Promise<Health> {
    return this.#send({ method: "GET", path: "/v1/health", parse: (b: Health) => b, idempotent: true, answers: [503] });
  }

  healthLive(): Promise<Liveness> {
    return this.#send({ method: "GET", path: "/v1/health/live", parse: (b: Liveness) => b, idempotent: true });
  }

  /** Readiness as a probe reads it: answered now, not retried; `status` says whether the server is ready (a 503's
   * report is returned, not thrown). */
  healthReady(): Promise<Readiness> {
    return this.#send({
      method: "GET", path: "/v1/health/ready", parse: (b: Readiness) => b, idempotent: true, answers: [503],
    });
  }
}
