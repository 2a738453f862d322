import type { Error as DriverError } from "@prisma/driver-adapter-utils";
import type { Failure } from "./protocol.js";

/*
 * better-sqlite3's errors in the shape Prisma maps to its own codes, the same kinds Prisma's better-sqlite3 adapter
 * gives: a unique violation becomes P2002 with the fields, a busy file SocketTimeout (which storage-errors.ts counts
 * as unavailable), and so on. Anything that is not an SQLite error travels by name and message.
 */

/** SQLITE_BUSY, the primary code of every busy variant (SQLITE_BUSY_RECOVERY, _SNAPSHOT, _TIMEOUT). */
const busyCode = 5;

/** An error the thread raises itself, already in Prisma's terms. */
export class DriverFailure extends Error {
  constructor(readonly driverError: DriverError) {
    super(driverError.kind);
  }
}

export function failureOf(error: unknown): Failure {
  if (error instanceof DriverFailure) return { driver: error.driverError };
  if (error instanceof Error && typeof (error as { code?: unknown }).code === "string") {
    const code = (error as Error & { code: string }).code;
    return { driver: { ...driverError(code, error.message), originalCode: code, originalMessage: error.message } };
  }
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: "Error", message: String(error) };
}

function driverError(code: string, message: string): DriverError {
  // "UNIQUE constraint failed: Operation.clientId, Operation.idempotencyKey"
  const columns = message.split("constraint failed: ")[1]?.split(", ");
  const fields = columns?.map((column) => column.split(".").at(-1) ?? column);
  switch (code) {
    case "SQLITE_CONSTRAINT_UNIQUE":
    case "SQLITE_CONSTRAINT_PRIMARYKEY":
      return {
        kind: "UniqueConstraintViolation",
        constraint: fields ? { fields } : undefined,
        table: columns?.[0]?.split(".").slice(0, -1).join(".") || undefined,
      };
    case "SQLITE_CONSTRAINT_NOTNULL":
      return { kind: "NullConstraintViolation", constraint: fields ? { fields } : undefined };
    case "SQLITE_CONSTRAINT_FOREIGNKEY":
    case "SQLITE_CONSTRAINT_TRIGGER":
      return { kind: "ForeignKeyConstraintViolation", constraint: { foreignKey: {} } };
  }
  const unknownCode = /^UNKNOWN_SQLITE_ERROR_(\d+)$/.exec(code)?.[1];
  const extendedCode = unknownCode === undefined ? undefined : Number(unknownCode);
  if (code.startsWith("SQLITE_BUSY") || (extendedCode !== undefined && (extendedCode & 0xff) === busyCode)) return { kind: "SocketTimeout" };
  if (message.startsWith("no such table: ")) return { kind: "TableDoesNotExist", table: message.slice("no such table: ".length) };
  if (message.startsWith("no such column: ")) return { kind: "ColumnNotFound", column: message.slice("no such column: ".length) };
  const missingColumn = message.split("has no column named ")[1];
  if (missingColumn !== undefined) return { kind: "ColumnNotFound", column: missingColumn };
  return { kind: "sqlite", extendedCode: extendedCode ?? 1, message };
}
