import { AxonError } from "../errors.js";
import type { NativeOutcome } from "../operations/native-calls.js";
import { advertisedRefs } from "./advertised-refs.js";
import { answerText, finishAnswer, forwardedHeaders, recordAllowed, recordRefused, relayAnswer, type GitExchange, type GitServices } from "./git-exchange.js";
import { pushCall } from "./git-operations.js";
import { PushAnswer } from "./push-answer.js";
import { mostDemanding, type ClassifiedUpdate } from "./push-classes.js";
import { isZeroId, PushCommandsError, type PushCommands } from "./push-commands.js";
import { PushIntake, pushTooLarge, type PushBody } from "./push-intake.js";
import { refusalReason } from "./refusals.js";
import { answerFormat, PushReportReader } from "./report-status.js";
import { upstreamUrl } from "./repository.js";
import { Spool } from "./spool.js";
import { readLimited, requestUpstream } from "./upstream.js";

/** The largest ref advertisement read to check that the pushed refs have not moved. */
const MAX_ADVERTISEMENT_BYTES = 64 * 1024 * 1024;

/**
 * `POST .../git-receive-pack`: one push, one decision. The body is spooled as it arrives while its commands and its
 * pack's commits classify every ref update; the push is then decided as one call (its most demanding class, every
 * ref in the target), never split. Refused, every ref is rejected in Git's own report; allowed (by a rule, a grant,
 * or an operator while the push stays open), the upstream's refs are checked against the old ids the client saw and
 * the unchanged body goes upstream, its report relayed and read for the outcome. Nothing reaches the upstream before
 * the decision, and a push whose client leaves is withdrawn.
 */
export async function receivePack(exchange: GitExchange, services: GitServices): Promise<void> {
  exchange.record.service = "git-receive-pack";
  if ((declaredLength(exchange.req) ?? 0) > services.maxPushBytes) return answerIntakeFailure(exchange, pushTooLarge(services.maxPushBytes));
  const spool = await Spool.create(services.spoolDirectory);
  const intake = new PushIntake(exchange.req, spool, services.maxPushBytes);
  try {
    await servePush(exchange, services, intake, spool);
  } finally {
    await spool.close();
  }
}

async function servePush(exchange: GitExchange, services: GitServices, intake: PushIntake, spool: Spool): Promise<void> {
  const { req, record, repository } = exchange;
  let commands: PushCommands;
  let updates: ClassifiedUpdate[];
  try {
    commands = await intake.commands;
    if (commands.updates.length === 0) {
      // Git's probe (a bare flush, sent before a large push to check authentication): nothing to decide.
      await intake.done;
      record.outcome = "ok";
      exchange.res.writeHead(200, { "content-type": "application/x-git-receive-pack-result", "cache-control": "no-cache" });
      return void (await finishAnswer(exchange));
    }
    updates = await intake.settled;
  } catch (error) {
    return answerIntakeFailure(exchange, error);
  }
  const format = answerFormat(commands.capabilities);
  const answer = new PushAnswer(exchange, format, updates);
  const operation = mostDemanding(updates);
  record.operation = operation;
  record.updates = updates.map((update) => ({ ref: update.ref, old: update.oldId, new: update.newId, class: update.operation }));

  // The call is withdrawn when the client leaves, the server shuts down, or the body turns out unreadable.
  const holding = new AbortController();
  const withdraw = () => holding.abort();
  exchange.signal.addEventListener("abort", withdraw, { once: true });
  intake.done.catch(withdraw);
  const declared = declaredLength(req);
  const call = pushCall(exchange.clientId, repository, operation, updates, commands.capabilities.includes("atomic"), declared);
  let onHeld!: (requestId: string) => void;
  const held = new Promise<string>((resolve) => (onHeld = resolve));
  // Once the body is in and the call waits for an operator, the terminal hears about it.
  void Promise.all([intake.done, held]).then(([, requestId]) => answer.waiting(requestId), () => undefined);

  // A push that must wait for an operator is bound to its whole body: the request shows the body's digest and size, and
  // the same push again (same refs, same bytes) waits on the same request.
  const beforeHeld = async () => {
    const body = await intake.done.catch((error: unknown) => Promise.reject(new IntakeFailed(error)));
    return { detail: { ...call.detail, body_bytes: body.bytes, body_sha256: body.sha256 }, attributes: { body_bytes: body.bytes } };
  };
  let decision;
  try {
    decision = await services.native().hold(call, { signal: holding.signal, onHeld, beforeHeld });
  } catch (error) {
    if (error instanceof IntakeFailed) return answerIntakeFailure(exchange, error.cause);
    throw error;
  } finally {
    answer.decided();
    exchange.signal.removeEventListener("abort", withdraw);
  }
  if (decision.effect === "refused") {
    recordRefused(record, decision);
    intake.discard();
    const body = await intake.done.catch((error: unknown) => error);
    if (!isPushBody(body)) return answerIntakeFailure(exchange, body);
    record.bytesIn = body.bytes;
    const stopping = decision.code === "operation_canceled" && services.shutdownSignal.aborted;
    return answer.reject(`axon: ${stopping ? "the server is restarting before the push was decided: push again" : refusalReason(decision, operation)}`);
  }
  recordAllowed(record, decision);
  const outcome = await forwardPush(exchange, services, { approved: "approval" in decision.via, intake, spool, answer, updates, format: { sideband: format.sidebandPacket !== undefined } }).catch(
    async (error: unknown): Promise<NativeOutcome> => {
      // The push broke off on its way upstream: because its body did (too large, the client left), or the host did.
      const body = await intake.done.catch((failure: unknown) => failure);
      if (!isPushBody(body)) answerIntakeFailure(exchange, body);
      else await answer.reject(`axon: ${error instanceof AxonError ? error.message : "the push could not be sent upstream"}`);
      return { ok: false, code: "git_push_failed", message: error instanceof AxonError ? error.message : "the push could not be sent upstream" };
    },
  );
  // The outcome is recorded (a grant's use kept or given back) before Git hears the push is over.
  await decision.finish(outcome);
  await finishAnswer(exchange);
  record.outcome = outcome.ok ? "ok" : record.outcome === "refused" ? "refused" : "failed";
  if (!outcome.ok) record.code ??= outcome.code;
}

interface PushInFlight {
  /** An operator approved it, after a wait: the refs are checked again before it goes. */
  approved: boolean;
  intake: PushIntake;
  spool: Spool;
  answer: PushAnswer;
  updates: ClassifiedUpdate[];
  format: { sideband: boolean };
}

/** Sends an allowed push upstream and relays the answer; resolves with what the upstream made of it. */
async function forwardPush(exchange: GitExchange, services: GitServices, push: PushInFlight): Promise<NativeOutcome> {
  const { record, repository, req } = exchange;
  const { intake, spool, answer, updates } = push;
  const refuse = async (code: string, reason: string, detail: Record<string, string | number> = {}): Promise<NativeOutcome> => {
    record.outcome = "refused";
    record.code = code;
    intake.discard();
    const body = await intake.done.catch((error: unknown) => error);
    if (!isPushBody(body)) {
      answerIntakeFailure(exchange, body);
      return { ok: false, code: "client_left", message: "the client went away" };
    }
    await answer.reject(`axon: ${reason}`);
    return { ok: false, code, message: reason, detail };
  };

  let authorization: string | undefined;
  try {
    authorization = await services.credentials.authorization(repository.host, repository.owner, repository.name, "write");
  } catch (error) {
    if (!(error instanceof AxonError)) throw error;
    return refuse("git_credential_unavailable", error.message);
  }

  const forwarding = new AbortController();
  // A client that leaves before its body has gone upstream whole takes the push with it; after that, the host's
  // answer is still read to its end, for the outcome.
  let bodySent = false;
  const stop = () => {
    if (!bodySent) forwarding.abort();
  };
  exchange.signal.addEventListener("abort", stop, { once: true });
  try {
    if (push.approved) {
      // While an operator looked, the refs may have moved: a push decided on one history is not sent onto another.
      // (A push allowed at once went by the advertisement the client just read; the host's own compare-and-swap of
      // each ref covers the moment between.)
      const check = await checkRefs(exchange, authorization, updates, forwarding.signal);
      if (!check.ok) return refuse(check.code, check.reason, check.detail);
      await answer.progress("approved: sending the push upstream");
    }
    const declared = declaredLength(req);
    const { response, sent } = await requestUpstream(repository.host.name, {
      method: "POST",
      url: upstreamUrl(repository, "git-receive-pack"),
      headers: { ...forwardedHeaders(req, ["content-type", "content-encoding", "accept"], authorization), ...(declared === undefined ? {} : { "content-length": String(declared) }) },
      body: spool.read(),
      signal: forwarding.signal,
    });
    void sent.then(() => (bodySent = true), () => undefined);
    record.upstreamStatus = response.statusCode;
    if (response.statusCode !== 200) {
      // A host that refused the push need not read the rest of it.
      response.resume();
      forwarding.abort();
      await sent.catch(() => undefined);
      return refuse("git_upstream_refused", `host ${repository.host.name} refused the push (HTTP ${response.statusCode})`, { upstream_status: response.statusCode ?? 0 });
    }
    const report = new PushReportReader(push.format.sideband);
    answer.relayStart();
    await relayAnswer(exchange, response, (piece) => report.push(piece));
    const body = await intake.done.catch(() => undefined);
    if (body) record.bytesIn = body.bytes;
    await sent.catch(() => undefined);
    const result = report.result();
    const refs = result.refs.map(({ ref, ok, reason }) => ({ ref, ok, ...(reason ? { reason } : {}) }));
    const detail = { upstream_status: 200, body_bytes: body?.bytes ?? spool.bytes, ...(body ? { body_sha256: body.sha256 } : {}), refs };
    if (!result.complete) return { ok: false, code: "upstream_result_unknown", message: "the host's report did not arrive whole", detail, unknown: true };
    // A ref that landed spent the authorization, even when a non-atomic push left another behind.
    if (result.unpackOk && refs.some((ref) => ref.ok)) return { ok: true, detail };
    record.outcome = "refused";
    return { ok: false, code: "git_push_rejected", message: result.refs.find((ref) => !ref.ok)?.reason ?? result.fatal ?? "the host rejected the push", detail };
  } finally {
    exchange.signal.removeEventListener("abort", stop);
  }
}

type RefCheck = { ok: true } | { ok: false; code: string; reason: string; detail?: Record<string, number> };

/** Whether every ref of the push is still where the client saw it on the host (its old id, or absent for a new one). */
async function checkRefs(exchange: GitExchange, authorization: string | undefined, updates: readonly ClassifiedUpdate[], signal: AbortSignal): Promise<RefCheck> {
  const { repository, record, req } = exchange;
  let response;
  try {
    ({ response } = await requestUpstream(repository.host.name, {
      method: "GET",
      url: upstreamUrl(repository, "info/refs", "?service=git-receive-pack"),
      headers: forwardedHeaders(req, [], authorization),
      signal,
    }));
  } catch (error) {
    if (!(error instanceof AxonError)) throw error;
    return { ok: false, code: "git_upstream_unreachable", reason: error.message };
  }
  if (response.statusCode !== 200) {
    response.resume();
    record.upstreamStatus = response.statusCode;
    return { ok: false, code: "git_upstream_refused", reason: `host ${repository.host.name} refused the push's ref check (HTTP ${response.statusCode})`, detail: { upstream_status: response.statusCode ?? 0 } };
  }
  const current = advertisedRefs(await readLimited(response, MAX_ADVERTISEMENT_BYTES));
  const moved = updates.filter((update) => current.get(update.ref) !== (isZeroId(update.oldId) ? undefined : update.oldId));
  if (moved.length === 0) return { ok: true };
  return { ok: false, code: "git_ref_moved", reason: `${moved.map((update) => update.ref).join(", ")} moved upstream since this push was prepared (fetch, then push again)` };
}

/** A body that could not be read as a push: Git hears why, as far as it still listens. */
function answerIntakeFailure(exchange: GitExchange, error: unknown): void {
  const { record } = exchange;
  record.outcome = "failed";
  if (error instanceof PushCommandsError) {
    record.code = "git_push_malformed";
    return answerText(exchange, 400, error.message);
  }
  if (error instanceof AxonError) {
    record.code = error.reason.toLowerCase();
    if (error.reason === "CLIENT_LEFT" || exchange.res.destroyed) return;
    return answerText(exchange, error.reason === "GIT_PUSH_TOO_LARGE" ? 413 : 400, error.message);
  }
  // The request stream failed: the client is gone.
  record.code = "client_left";
  if (!exchange.res.headersSent) exchange.res.destroy();
}

/** The push's body could not be read while it waited to be decided: the client left, or it was no push. */
class IntakeFailed extends Error {
  constructor(override readonly cause: unknown) {
    super("the push's body could not be read");
  }
}

function isPushBody(value: unknown): value is PushBody {
  return typeof value === "object" && value !== null && "sha256" in value;
}

function declaredLength(req: GitExchange["req"]): number | undefined {
  const value = req.headers["content-length"];
  return typeof value === "string" && /^\d{1,15}$/.test(value) ? Number(value) : undefined;
}
