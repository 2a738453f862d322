import type { Logger } from "../logger.js";
import { Prisma } from "../store/database.js";
import { dialects } from "./sql-dialect.js";
import { queryRows, type StoreClient } from "./store.js";

/** An audit record as the native calls write it: what happened, with no secret, body or upstream response. */
export type AuditEntry = Pick<Prisma.AuditRecordCreateManyInput, "actor" | "actorKind" | "action" | "category" | "operationId" | "grantId" | "detail">;

/** How long a record may wait for others to share its statement. */
const flushAfterMs = 50;
const mostPerStatement = 500;

/**
 * Audit records of calls that write nothing else (a call allowed or refused outright), written in batches of one
 * statement each, after the call: a busy route pays a fraction of a statement per call, and no call waits for it.
 */
export class AuditBatch {
  private entries: Prisma.AuditRecordCreateManyInput[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly options: { store: StoreClient; logger: Logger }) {}

  add(entry: AuditEntry): void {
    this.entries.push({ ...entry, at: new Date() });
    if (this.entries.length >= mostPerStatement) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), flushAfterMs);
  }

  /** Writes what is waiting; resolves once everything added so far is written (or its failure logged). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.entries;
    this.entries = [];
    if (batch.length > 0) {
      this.writing = this.writing.then(() =>
        insertAll(this.options.store, batch).then(
          () => undefined,
          (error: unknown) => this.options.logger.error({ err: error, category: "storage", records: batch.length }, "audit records could not be written"),
        ),
      );
    }
    return this.writing;
  }
}

/**
 * One INSERT of every record, past Prisma's query compiler on SQLite: Prisma's createMany compiles its query anew on
 * each flush, which cost a busy native route more CPU than the rest of its calls' work.
 */
function insertAll(store: StoreClient, records: Prisma.AuditRecordCreateManyInput[]): Promise<unknown> {
  const sql = dialects[store.provider];
  const rows = records.map(
    (record) => Prisma.sql`(${sql.time(record.at as Date)}, ${record.actor}, ${record.actorKind}, ${record.action}, ${record.category ?? null},
      ${record.operationId ?? null}, ${record.grantId ?? null}, ${sql.json(record.detail)})`,
  );
  return queryRows(
    store,
    Prisma.sql`INSERT INTO "AuditRecord" ("at", "actor", "actorKind", "action", "category", "operationId", "grantId", "detail") VALUES ${Prisma.join(rows)} RETURNING "id"`,
  );
}
