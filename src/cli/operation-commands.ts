import { randomUUID } from "node:crypto";
import { requireToken, type CliContext, type Json } from "./context.js";
import { CliFailure, ExitStatus } from "./cli-failure.js";
import { printJson, printLine, printTable, startSpinner, text } from "./output.js";
import { RestClient } from "./rest-client.js";

const OPERATIONS = "/api/agent/v1/operations";
const TERMINAL_STATES = new Set(["succeeded", "failed", "denied", "expired", "canceled"]);
/** The server's longest long poll (spec: wait_seconds 0-30). */
const MAX_WAIT_SECONDS = 30;

const agentApi = (context: CliContext) => new RestClient(context.url, requireToken(context.token, "client"));
const operationRoute = (id: string) => `${OPERATIONS}/${encodeURIComponent(id)}`;

export interface SubmitOptions {
  operation: string;
  target: Json;
  arguments: Json;
  reason: string;
  key?: string;
}

/** `axon op submit`: returns at once with the operation as submitted; a generated key makes each call a new one. */
export async function submitOperation(context: CliContext, options: SubmitOptions): Promise<void> {
  const operation = await agentApi(context).post(OPERATIONS, {
    idempotency_key: options.key ?? `cli-${randomUUID()}`,
    operation: options.operation,
    target: options.target,
    arguments: options.arguments,
    reason: options.reason,
  });
  if (context.json) return printJson(operation);
  printOperation(operation);
}

export async function getOperation(context: CliContext, id: string): Promise<void> {
  const operation = await agentApi(context).get(operationRoute(id));
  if (context.json) return printJson(operation);
  printOperation(operation);
}

/**
 * `axon op wait`: long-polls the events route until the operation is terminal. Exits 0 only when it succeeded: a
 * failed, denied, expired or canceled operation, or a timeout first, is exit status 1.
 */
export async function waitForOperation(context: CliContext, id: string, timeoutSeconds: number | undefined): Promise<void> {
  const api = agentApi(context);
  const deadline = timeoutSeconds === undefined ? Infinity : Date.now() + timeoutSeconds * 1000;
  const spinner = context.json ? undefined : startSpinner(`waiting for ${id}`);
  let operation: Json | undefined;
  try {
    for (let revision = 0; ; ) {
      const remaining = Math.ceil((deadline - Date.now()) / 1000);
      operation = await api.get(`${operationRoute(id)}/events`, { after_revision: revision, wait_seconds: Math.max(0, Math.min(MAX_WAIT_SECONDS, remaining)) });
      spinner?.update(`${id}: ${text(operation.state)} (revision ${text(operation.revision)})`);
      if (TERMINAL_STATES.has(text(operation.state)) || Date.now() >= deadline) break;
      revision = Number(operation.revision);
    }
  } finally {
    spinner?.stop();
  }
  if (context.json) printJson(operation);
  else printOperation(operation);
  const state = text(operation.state);
  if (state === "succeeded") return;
  if (!TERMINAL_STATES.has(state)) throw new CliFailure(`${id} is still ${state} after ${timeoutSeconds} s`, ExitStatus.failed);
  const error = operation.error as Json | undefined;
  throw new CliFailure(`${id} ended ${state}${error ? `: ${text(error.message)} (${text(error.code)})` : ""}`, ExitStatus.failed);
}

export async function listOperations(context: CliContext, options: { state?: string; limit?: number; key?: string }): Promise<void> {
  const page = await agentApi(context).get(OPERATIONS, { state: options.state, limit: options.limit, idempotency_key: options.key });
  if (context.json) return printJson(page);
  const operations = (page.operations as Json[] | undefined) ?? [];
  printTable(
    ["ID", "STATE", "OPERATION", "KEY", "UPDATED", "TITLE"],
    operations.map((op) => [text(op.id), text(op.state), text(op.operation), text(op.idempotency_key), text(op.updated_at), text((op.presentation as Json | undefined)?.title)]),
  );
  if (page.next_cursor) printLine(`(more: ${text(page.next_cursor)})`);
}

/**
 * `axon op cancel`: the server answers a cancel of an operation that already ended with the operation unchanged,
 * so that is checked first and said plainly (exit status 5, as for an executing one), rather than left to a state line.
 */
export async function cancelOperation(context: CliContext, id: string): Promise<void> {
  const api = agentApi(context);
  const before = await api.get(operationRoute(id));
  const ended = TERMINAL_STATES.has(text(before.state));
  const operation = ended ? before : await api.post(`${operationRoute(id)}/cancel`, {});
  // It may also have ended between the two calls.
  if (ended || operation.state !== "canceled") throw new CliFailure(`${id} was not canceled: it had already ended ${text(operation.state)}`, ExitStatus.conflict);
  if (context.json) return printJson(operation);
  printOperation(operation);
}

export interface GrantRequestOptions {
  operation: string;
  target: Json;
  reason: string;
  minutes?: number;
  maxUses?: number;
  id?: string;
}

/** `axon grant request`: asks for a grant ahead of use; a generated client_request_id makes each call a new one. */
export async function requestGrant(context: CliContext, options: GrantRequestOptions): Promise<void> {
  const grant = await agentApi(context).post("/api/grants", {
    client_request_id: options.id ?? `cli-${randomUUID()}`,
    operation: options.operation,
    target: options.target,
    reason: options.reason,
    ...(options.minutes === undefined ? {} : { minutes: options.minutes }),
    ...(options.maxUses === undefined ? {} : { max_uses: options.maxUses }),
  });
  if (context.json) return printJson(grant);
  printFields(grant, ["id", "status", "operation", "target", "mode", "minutes", "max_uses", "uses_remaining", "expires_at", "client_request_id", "revision"]);
}

export async function getGrant(context: CliContext, id: string): Promise<void> {
  const grant = await agentApi(context).get(`/api/grants/${encodeURIComponent(id)}`);
  if (context.json) return printJson(grant);
  printFields(grant, ["id", "status", "operation", "target", "reason", "mode", "minutes", "max_uses", "uses_remaining", "used_count", "expires_at", "client_request_id", "revision"]);
}

export async function listGrants(context: CliContext): Promise<void> {
  const page = await agentApi(context).get("/api/grants");
  if (context.json) return printJson(page);
  const grants = (page.grants as Json[] | undefined) ?? [];
  printTable(
    ["ID", "STATUS", "OPERATION", "MODE", "USES LEFT", "EXPIRES", "TARGET"],
    grants.map((grant) => [text(grant.id), text(grant.status), text(grant.operation), text(grant.mode), text(grant.uses_remaining), text(grant.expires_at), text(grant.target)]),
  );
}

function printOperation(operation: Json): void {
  printFields(operation, ["id", "state", "operation", "idempotency_key", "revision", "approval_id", "updated_at"]);
  const presentation = operation.presentation as Json | undefined;
  if (presentation?.title) printLine(`title: ${text(presentation.title)}`);
  if (presentation?.summary) printLine(`summary: ${text(presentation.summary)}`);
  if (operation.result !== undefined) printLine(`result: ${JSON.stringify(operation.result)}`);
  const error = operation.error as Json | undefined;
  if (error) printLine(`error: ${text(error.code)}: ${text(error.message)}`);
}

export function printFields(object: Json, names: string[]): void {
  for (const name of names) if (object[name] !== undefined && object[name] !== "") printLine(`${name}: ${text(object[name])}`);
}
