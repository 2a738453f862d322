import { invalidArgument, notFound } from "../errors.js";

/** Pages are newest first; a cursor names the last row of the page before, for the one who received it. */
export const newestFirst = [{ createdAt: "desc" as const }, { id: "desc" as const }];

/** A row a page is made of. */
export interface PageRow {
  createdAt: Date;
  id: string;
}

/**
 * The `where` condition for the rows after `cursor` in newest-first order. A cursor is bound to its `owner` (the client
 * or operator who received it) and to a row that still exists (agent-v1.md §11): a malformed one is INVALID_ARGUMENT,
 * another owner's or one naming no row (as `findRow` reads it, within the owner's scope) is NOT_FOUND.
 */
export async function afterCursor(cursor: string | undefined, owner: string, findRow: (id: string) => Promise<PageRow | null>) {
  if (cursor === undefined || cursor === "") return {};
  const named = decodeCursor(cursor);
  const row = named.owner === owner ? await findRow(named.id) : null;
  if (!row) throw notFound("CURSOR_NOT_FOUND", "the cursor names nothing this caller can page from", {});
  return { OR: [{ createdAt: { lt: row.createdAt } }, { createdAt: row.createdAt, id: { lt: row.id } }] };
}

/** `limit` rows and, when there are more, `owner`'s cursor to the next page (one extra row was fetched to know). */
export function pageOf<Row extends PageRow>(rows: Row[], limit: number, owner: string): { items: Row[]; nextCursor?: string } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, ...(rows.length > limit && last ? { nextCursor: encodeCursor(owner, last.id) } : {}) };
}

/** The page size asked for, `fallback` when absent; INVALID_ARGUMENT outside 1 to `most` (0 included). */
export function pageLimit(limit: number | undefined, fallback: number, most: number): number {
  const chosen = limit ?? fallback;
  if (chosen < 1 || chosen > most) throw invalidArgument("INVALID_LIMIT", `limit must be 1 to ${most}`, [{ field: "limit", description: `1 to ${most}` }]);
  return chosen;
}

function encodeCursor(owner: string, id: string): string {
  return Buffer.from(JSON.stringify([owner, id])).toString("base64url");
}

function decodeCursor(cursor: string): { owner: string; id: string } {
  try {
    if (/^[A-Za-z0-9_-]{1,1024}$/.test(cursor)) {
      const parts = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
      if (Array.isArray(parts) && parts.length === 2 && parts.every((part) => typeof part === "string" && part.length > 0 && !part.includes("\u0000"))) {
        return { owner: parts[0] as string, id: parts[1] as string };
      }
    }
  } catch {
    // falls through to the error below
  }
  throw invalidArgument("INVALID_CURSOR", "the cursor is not one this server gave out", [{ field: "cursor", description: "an opaque next_cursor value" }]);
}
