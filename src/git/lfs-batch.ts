import type { JsonObject } from "@bufbuild/protobuf";
import { AxonError } from "../errors.js";
import type { NativeOutcome } from "../operations/native-calls.js";
import { isJsonObject } from "../json.js";
import { finishAnswer, forwardedHeaders, recordAllowed, recordRefused, send, type GitExchange, type GitServices } from "./git-exchange.js";
import { lfsCall } from "./git-operations.js";
import { answerLfs, answerLfsUpstreamFailure, LFS_TYPE, LfsRequestError, readJsonBody } from "./lfs-answers.js";
import type { LfsCapabilities } from "./lfs-capabilities.js";
import { refusalReason } from "./refusals.js";
import { upstreamUrl } from "./repository.js";
import { readLimited, requestUpstream } from "./upstream.js";

const MAX_BATCH_BYTES = 4 * 1024 * 1024;
const MAX_BATCH_OBJECTS = 1000;
const OID = /^[0-9a-f]{64}$/;
/** The actions each operation may carry (git-lfs batch API), and the method its transfer uses. */
const ACTIONS: Record<string, Record<string, "GET" | "PUT" | "POST">> = {
  download: { download: "GET" },
  upload: { upload: "PUT", verify: "POST" },
};

interface BatchObject {
  oid: string;
  size: number;
}

/**
 * `POST .../info/lfs/objects/batch`: decided as `git.lfs.read` (downloads) or `git.lfs.write` (uploads), sent to the
 * host as a basic-transfer batch, and answered with every action's URL replaced by a capability of Axon's own, so
 * the agent never sees where the host keeps its objects nor how it signs for them.
 */
export async function lfsBatch(exchange: GitExchange, services: GitServices, capabilities: LfsCapabilities): Promise<void> {
  const { record, repository, req } = exchange;
  record.service = "lfs batch";
  let batch: { operation: "download" | "upload"; objects: BatchObject[]; ref: string | undefined };
  try {
    batch = parseBatch(await readJsonBody(exchange, MAX_BATCH_BYTES));
  } catch (error) {
    if (!(error instanceof LfsRequestError)) throw error;
    record.outcome = "failed";
    record.code = "lfs_request_invalid";
    return answerLfs(exchange, error.status, error.message);
  }
  const operation = batch.operation === "download" ? "git.lfs.read" : "git.lfs.write";
  record.operation = operation;
  const bytes = batch.objects.reduce((sum, object) => sum + object.size, 0);
  const detail = { operation: batch.operation, objects: batch.objects.length, bytes, ...(batch.ref ? { ref: batch.ref } : {}) };
  const words = `Git LFS ${batch.operation} of ${batch.objects.length} object${batch.objects.length === 1 ? "" : "s"} (${bytes} bytes)`;
  const decision = await services.native().hold(lfsCall(exchange.clientId, repository, operation, detail, words), { signal: exchange.signal });
  if (decision.effect === "refused") {
    recordRefused(record, decision);
    return answerLfs(exchange, 403, refusalReason(decision, operation));
  }
  recordAllowed(record, decision);
  let outcome: NativeOutcome;
  try {
    const authorization = await services.credentials.authorization(repository.host, repository.owner, repository.name, batch.operation === "download" ? "read" : "write");
    const { response } = await requestUpstream(repository.host.name, {
      method: "POST",
      url: upstreamUrl(repository, "info/lfs/objects/batch"),
      headers: { ...forwardedHeaders(req, [], authorization), accept: LFS_TYPE, "content-type": LFS_TYPE },
      body: Buffer.from(JSON.stringify({ operation: batch.operation, transfers: ["basic"], objects: batch.objects, ...(batch.ref ? { ref: { name: batch.ref } } : {}), hash_algo: "sha256" })),
      signal: exchange.signal,
    });
    record.upstreamStatus = response.statusCode;
    if (response.statusCode !== 200) {
      response.resume();
      answerLfsUpstreamFailure(exchange, response.statusCode ?? 502);
      outcome = { ok: false, code: "git_upstream_refused", message: `the host answered HTTP ${response.statusCode}`, detail: { upstream_status: response.statusCode ?? 0 } };
    } else {
      const answer = confined(JSON.parse((await readLimited(response, MAX_BATCH_BYTES * 4)).toString("utf8")), batch, exchange, capabilities);
      exchange.res.writeHead(200, { "content-type": LFS_TYPE, "cache-control": "no-store" });
      await send(exchange, Buffer.from(JSON.stringify(answer)));
      await finishAnswer(exchange);
      record.outcome = "ok";
      outcome = { ok: true, detail: { upstream_status: 200, objects: batch.objects.length } };
    }
  } catch (error) {
    if (!(error instanceof AxonError || error instanceof SyntaxError || error instanceof LfsRequestError)) throw error;
    const message = error instanceof AxonError ? error.message : error instanceof LfsRequestError ? error.message : "the host's batch answer is not JSON";
    record.outcome = "failed";
    record.code = error instanceof AxonError ? error.reason.toLowerCase() : "lfs_upstream_invalid";
    answerLfs(exchange, error instanceof LfsRequestError ? error.status : 502, message);
    outcome = { ok: false, code: record.code, message };
  }
  await decision.finish(outcome);
}

function parseBatch(body: unknown): { operation: "download" | "upload"; objects: BatchObject[]; ref: string | undefined } {
  if (!isJsonObject(body)) throw new LfsRequestError(422, "a batch request is a JSON object");
  const operation = body.operation;
  if (operation !== "download" && operation !== "upload") throw new LfsRequestError(422, 'operation must be "download" or "upload"');
  const transfers = body.transfers;
  if (Array.isArray(transfers) && transfers.length > 0 && !transfers.includes("basic")) throw new LfsRequestError(422, "only the basic transfer adapter is served through Axon");
  const hashAlgo = body.hash_algo;
  if (hashAlgo !== undefined && hashAlgo !== "sha256") throw new LfsRequestError(409, "only sha256 object ids are served");
  const objects = body.objects;
  if (!Array.isArray(objects) || objects.length === 0 || objects.length > MAX_BATCH_OBJECTS) throw new LfsRequestError(422, `objects must list 1 to ${MAX_BATCH_OBJECTS} objects`);
  const parsed = objects.map((object) => {
    if (!isJsonObject(object) || typeof object.oid !== "string" || !OID.test(object.oid)) throw new LfsRequestError(422, "each object has an oid of 64 lower-case hex digits");
    if (typeof object.size !== "number" || !Number.isSafeInteger(object.size) || object.size < 0) throw new LfsRequestError(422, "each object has a size in bytes");
    return { oid: object.oid, size: object.size };
  });
  const ref = isJsonObject(body.ref) && typeof body.ref.name === "string" && body.ref.name.length <= 1024 ? body.ref.name : undefined;
  return { operation, objects: parsed, ref };
}

/**
 * The host's batch answer with every action replaced by a capability: only objects asked for, only the actions
 * their operation takes, only basic transfers; errors per object pass with their code and a message of Axon's.
 */
function confined(answer: unknown, batch: { operation: "download" | "upload"; objects: BatchObject[] }, exchange: GitExchange, capabilities: LfsCapabilities): unknown {
  if (!isJsonObject(answer) || !Array.isArray(answer.objects)) throw new LfsRequestError(502, "the host's batch answer lists no objects");
  if (answer.transfer !== undefined && answer.transfer !== "basic") throw new LfsRequestError(502, `the host chose the ${String(answer.transfer)} transfer, which Axon does not serve`);
  const asked = new Map(batch.objects.map((object) => [object.oid, object]));
  const base = `${originOf(exchange)}/git/${exchange.repository.host.name}/${exchange.repository.path}/info/lfs/objects/`;
  capabilities.sweep();
  const objects = answer.objects.flatMap((object): JsonObject[] => {
    if (!isJsonObject(object) || typeof object.oid !== "string" || !asked.has(object.oid)) return [];
    const { oid, size } = asked.get(object.oid)!;
    if (isJsonObject(object.error)) {
      const code = typeof object.error.code === "number" ? object.error.code : 500;
      return [{ oid, size, error: { code, message: `axon: host ${exchange.repository.host.name} answered ${code} for this object` } }];
    }
    const actions: JsonObject = {};
    for (const [name, method] of Object.entries(ACTIONS[batch.operation]!)) {
      const action = isJsonObject(object.actions) ? object.actions[name] : undefined;
      if (!isJsonObject(action) || typeof action.href !== "string") continue;
      const href = safeHref(action.href);
      if (href === undefined) throw new LfsRequestError(502, "the host's batch answer has an action URL that is not http(s)");
      const headers: Record<string, string> = {};
      if (isJsonObject(action.header)) for (const [header, value] of Object.entries(action.header)) if (typeof value === "string") headers[header] = value;
      const issued = capabilities.issue(
        { clientId: exchange.clientId, host: exchange.repository.host.name, repository: exchange.repository.path, oid, size, method, href, headers },
        { inSeconds: action.expires_in, at: action.expires_at },
      );
      if (issued === undefined) throw new LfsRequestError(503, "too many LFS transfers are open on this server: try again shortly");
      actions[name] = { href: `${base}${issued.id}`, expires_in: issued.expiresInSeconds };
    }
    return [{ oid, size, authenticated: true, ...(Object.keys(actions).length > 0 ? { actions } : {}) }];
  });
  return { transfer: "basic", objects, hash_algo: "sha256" };
}

function safeHref(href: string): string | undefined {
  try {
    const url = new URL(href);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Axon's origin as the client reached it, for the capability URLs it is handed. */
function originOf(exchange: GitExchange): string {
  const { req } = exchange;
  const encrypted = "encrypted" in req.socket && (req.socket as { encrypted?: boolean }).encrypted === true;
  const forwarded = req.headers["x-forwarded-proto"];
  const scheme = encrypted || forwarded === "https" ? "https" : "http";
  const authority = req.headers.host ?? (req.headers as Record<string, string | undefined>)[":authority"];
  return `${scheme}://${authority !== undefined && /^[A-Za-z0-9.:[\]-]{1,300}$/.test(authority) ? authority : "localhost"}`;
}
