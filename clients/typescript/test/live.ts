/**
 * What the tests against a live server need: its URL and keys from the environment, as
 * tests/clients/test_typescript_client.py passes them (HAKI_URL, HAKI_API_KEY for HAKI_PROJECT, and
 * HAKI_OTHER_KEY for HAKI_OTHER_PROJECT), and a subject of each test's own, so that test files running at
 * once never read each other's memory. Only the consent test changes a project's settings: the other project's.
 */
import { randomUUID } from "node:crypto";
import { Client, type ClientOptions } from "../src/index.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through tests/clients/test_typescript_client.py`);
  return value;
}

export const live = {
  url: required("HAKI_URL"),
  key: required("HAKI_API_KEY"),
  otherKey: required("HAKI_OTHER_KEY"),
  otherProject: required("HAKI_OTHER_PROJECT"),
  project: required("HAKI_PROJECT"),
};

export function client(options: ClientOptions = {}): Client {
  return new Client({ baseUrl: live.url, apiKey: live.key, projectId: live.project, backoffMs: 10, ...options });
}

export function subject(name: string): string {
  return `${name}-${randomUUID().slice(0, 8)}`;
}

/** The server's own JSON for a request, fetched without the client. */
export async function raw(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(live.url + path, {
    method,
    headers: { Authorization: `Bearer ${live.key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.json();
}
