import { invalidArgument } from "../errors.js";
import { terminalStates } from "./lifecycle.js";
import type { Notifier } from "./notifier.js";
import type { OwnOperations } from "./own-operations.js";
import type { EventRow, OperationRow, StoreClient } from "./store.js";

export interface WaitOptions {
  store: StoreClient;
  notifier: Notifier;
  operations: OwnOperations;
}

/** How often waits, watches and the event feed re-read the database when nothing woke them. */
const recheckMs = 1000;
/** How long after an event the feed waits for a missing seq before it goes past it (see `events`). */
const eventGapGraceMs = 3_000;

/** Long polls, watches and the operator event feed: each answers on a change, woken by the notifier. */
export class Waits {
  constructor(private readonly options: WaitOptions) {}

  /** Long poll: the operation once its revision passes `afterRevision` or it is terminal, else when time is up. */
  async wait(clientId: string, id: string, afterRevision: number, waitSeconds: number | undefined, signal?: AbortSignal): Promise<OperationRow> {
    const seconds = waitSeconds ?? 30;
    if (!Number.isInteger(seconds) || seconds < 0 || seconds > 30) {
      throw invalidArgument("INVALID_WAIT_SECONDS", "wait_seconds must be 0 to 30", [{ field: "wait_seconds", description: "0 to 30" }]);
    }
    if (afterRevision < 0) {
      throw invalidArgument("INVALID_AFTER_REVISION", "after_revision must be 0 or more", [{ field: "after_revision", description: ">= 0" }]);
    }
    const deadline = Date.now() + seconds * 1000;
    // The operation as a change made here handed it over: answering with it saves reading what was just written.
    let changed: OperationRow | undefined;
    for (;;) {
      // Re-read every second even without a wake-up: a change whose notification was lost (PostgreSQL reconnecting)
      // or never sent (another process on the same SQLite file) is still seen promptly.
      const wake = this.options.notifier.waitForChange(id, Math.min(recheckMs, Math.max(0, deadline - Date.now())), signal);
      const operation = changed ?? (await this.options.operations.get(clientId, id));
      if (operation.revision > afterRevision || terminalStates.has(operation.state) || Date.now() >= deadline || signal?.aborted) {
        return operation;
      }
      changed = await wake;
    }
  }

  /** The operation at each new revision, until it is terminal. */
  async *watch(clientId: string, id: string, afterRevision: number, signal: AbortSignal): AsyncIterable<OperationRow> {
    let seen = afterRevision;
    while (!signal.aborted) {
      const operation = await this.wait(clientId, id, seen, 30, signal);
      if (operation.revision > seen) {
        seen = operation.revision;
        yield operation;
      }
      if (terminalStates.has(operation.state)) return;
    }
  }

  /**
   * The operators' feed (agent-v1.md §11): after `afterSeq` when they resume; else first the retained events of every
   * request not yet terminal (pending or active), so a new operator sees the queue, then everything from that moment on.
   */
  async *operatorFeed(afterSeq: bigint | number | undefined, signal: AbortSignal): AsyncIterable<EventRow> {
    if (afterSeq !== undefined) return yield* this.events(afterSeq, signal);
    const { store } = this.options;
    const latest = (await store.event.findFirst({ orderBy: { seq: "desc" }, select: { seq: true } }))?.seq ?? 0;
    const open = await store.grant.findMany({ where: { status: { in: ["pending", "active"] } }, select: { id: true } });
    if (open.length > 0) {
      yield* await store.event.findMany({ where: { grantId: { in: open.map((grant) => grant.id) }, seq: { lte: latest } }, orderBy: { seq: "asc" } });
    }
    yield* this.events(latest, signal);
  }

  /** The event feed after `afterSeq` (undefined = from now on), in seq order, as it grows; wakes on changes. */
  async *events(afterSeq: bigint | number | undefined, signal: AbortSignal): AsyncIterable<EventRow> {
    const { store, notifier } = this.options;
    let seen = afterSeq === undefined ? ((await store.event.findFirst({ orderBy: { seq: "desc" } }))?.seq ?? 0) : Number(afterSeq);
    while (!signal.aborted) {
      const wake = notifier.waitForChange("*", recheckMs, signal);
      const batch = await store.event.findMany({ where: { seq: { gt: seen } }, orderBy: { seq: "asc" }, take: 100 });
      let gap = false;
      for (const event of batch) {
        // PostgreSQL hands out a seq when the row is inserted, not when it commits: a seq missing just before a young
        // event may belong to a transaction still on its way. Wait for it (a rolled-back one never comes), so that a
        // reader resuming after the last seq it saw skips nothing.
        gap = event.seq !== seen + 1 && Date.now() - event.createdAt.getTime() < eventGapGraceMs;
        if (gap) break;
        seen = event.seq;
        yield event;
      }
      if (batch.length === 0 || gap) await wake;
    }
  }
}
