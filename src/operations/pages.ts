import { invalidArgument } from "../errors.js";

/** Pages are newest first; the cursor is the last row's (created_at, id), opaque to clients. */
export const newestFirst = [{ createdAt: "desc" as const }, { id: "desc" as const }];

/** The `where` condition for the rows after `cursor` in newest-first order. */
export function afterCursor(cursor: string | undefined) {
  if (!cursor) return {};
  const after = decodeCursor(cursor);
  return { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] };
}

/** `limit` rows and, when there are more, the cursor to the next page (one extra row was fetched to know). */
export function pageOf<Row extends { createdAt: Date; id: string }>(rows: Row[], limit: number): { items: Row[]; nextCursor?: string } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, ...(rows.length > limit && last ? { nextCursor: encodeCursor(last) } : {}) };
}

/** The page size asked for, `fallback` when absent; INVALID_ARGUMENT outside 1 to `most`. */
export function pageLimit(limit: number | undefined, fallback: number, most: number): number {
  const chosen = limit || fallback;
  if (chosen < 1 || chosen > most) throw invalidArgument("INVALID_LIMIT", `limit must be 1 to ${most}`, [{ field: "limit", description: `1 to ${most}` }]);
  return chosen;
}

function encodeCursor(row: { createdAt: Date; id: string }): string {
  return Buffer.from(JSON.stringify([row.createdAt.toISOString(), row.id])).toString("base64url");
}

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [string, string];
    const date = new Date(createdAt);
    if (typeof id === "string" && !Number.isNaN(date.getTime())) return { createdAt: date, id };
  } catch {
    // falls through to the error below
  }
  throw invalidArgument("INVALID_CURSOR", "the cursor is not one this server gave out", [{ field: "cursor", description: "an opaque next_cursor value" }]);
}
