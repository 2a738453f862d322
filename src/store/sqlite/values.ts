import { ColumnTypeEnum, type ArgType, type ColumnType, type SqlQuery, type SqlResultSet } from "@prisma/driver-adapter-utils";

/*
 * Values between Prisma's query plans and SQLite, as Prisma's own better-sqlite3 adapter stores and reads them, so a
 * database written through either reads the same through the other: date-times as ISO-8601 text with "+00:00",
 * booleans as 0/1, integers read as bigint and handed back as numbers when they fit.
 */

/** Prisma's parameters in the form better-sqlite3 binds (numbers, bigints, text, bytes, null). */
export function toSqlite(query: SqlQuery): unknown[] {
  return query.args.map((value, index) => toSqliteValue(value, query.argTypes[index]));
}

function toSqliteValue(value: unknown, type: ArgType | undefined): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value instanceof Date) return isoText(value);
  if (typeof value !== "string") return value;
  switch (type?.scalarType) {
    case "int":
      return Number.parseInt(value, 10);
    case "float":
    case "decimal":
      return Number.parseFloat(value);
    case "bigint":
      return BigInt(value);
    case "datetime":
      return isoText(new Date(value));
    case "bytes":
      return Buffer.from(value, "base64");
    default:
      return value;
  }
}

function isoText(date: Date): string {
  return date.toISOString().replace("Z", "+00:00");
}

const declaredTypes = new Map<string, ColumnType>([
  ...["TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "SERIAL", "INT2"].map((name) => [name, ColumnTypeEnum.Int32] as const),
  ...["BIGINT", "UNSIGNED BIG INT", "INT8"].map((name) => [name, ColumnTypeEnum.Int64] as const),
  ...["DOUBLE", "DOUBLE PRECISION", "NUMERIC", "REAL"].map((name) => [name, ColumnTypeEnum.Double] as const),
  ...["TEXT", "CLOB", "CHARACTER", "VARCHAR", "VARYING CHARACTER", "NCHAR", "NATIVE CHARACTER", "NVARCHAR"].map((name) => [name, ColumnTypeEnum.Text] as const),
  ...["DATETIME", "TIMESTAMP"].map((name) => [name, ColumnTypeEnum.DateTime] as const),
  ["DECIMAL", ColumnTypeEnum.Numeric],
  ["FLOAT", ColumnTypeEnum.Float],
  ["TIME", ColumnTypeEnum.Time],
  ["DATE", ColumnTypeEnum.Date],
  ["BLOB", ColumnTypeEnum.Bytes],
  ["BOOLEAN", ColumnTypeEnum.Boolean],
  ["JSONB", ColumnTypeEnum.Json],
]);

/**
 * The type Prisma reads a column as: its declared type when it has a known one; for an expression (no declared
 * type), the type of its first non-null value; integer when every value is null.
 */
export function columnTypes(declared: (string | null)[], rows: unknown[][]): ColumnType[] {
  return declared.map((name, index) => {
    const known = name === null ? undefined : declaredTypes.get(name.toUpperCase());
    if (known !== undefined) return known;
    const sample = rows.find((row) => row[index] !== null)?.[index];
    return sample === undefined ? ColumnTypeEnum.Int32 : typeOfValue(sample);
  });
}

function typeOfValue(value: unknown): ColumnType {
  switch (typeof value) {
    case "string":
      return ColumnTypeEnum.Text;
    case "bigint":
      return ColumnTypeEnum.Int64;
    case "number":
      return ColumnTypeEnum.UnknownNumber;
    default:
      if (value instanceof Uint8Array) return ColumnTypeEnum.Bytes;
      throw new TypeError(`SQLite returned a value of type ${typeof value}`);
  }
}

/** A row as Prisma reads it, in place: integers as numbers (text past 2^53), epoch numbers in date-time columns as ISO text. */
export function fromSqlite(row: unknown[], types: ColumnType[]): unknown[] {
  for (let index = 0; index < row.length; index++) {
    const value = row[index];
    const type = types[index];
    if (typeof value === "number") {
      if (type === ColumnTypeEnum.DateTime) row[index] = new Date(value).toISOString();
      else if ((type === ColumnTypeEnum.Int32 || type === ColumnTypeEnum.Int64) && !Number.isInteger(value)) row[index] = Math.trunc(value);
    } else if (typeof value === "bigint") {
      if (type === ColumnTypeEnum.DateTime) row[index] = new Date(Number(value)).toISOString();
      else row[index] = Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
    }
  }
  return row;
}

/** Rows as Prisma's raw queries give them: objects by column name, date-times as Dates, JSON parsed, booleans. */
export function objectsOf<T>({ columnNames, columnTypes, rows }: SqlResultSet): T[] {
  return rows.map((row) => {
    const object: Record<string, unknown> = {};
    columnNames.forEach((name, index) => {
      const value = row[index];
      const type = columnTypes[index];
      if (value === null || value === undefined) object[name] = null;
      else if (type === ColumnTypeEnum.DateTime) object[name] = dateOf(value as string);
      else if (type === ColumnTypeEnum.Json) object[name] = JSON.parse(value as string);
      else if (type === ColumnTypeEnum.Boolean) object[name] = Boolean(value);
      else object[name] = value;
    });
    return object as T;
  });
}

// SQLite's CURRENT_TIMESTAMP (a column default) writes UTC without a zone, which Date would read as local time.
function dateOf(text: string): Date {
  return new Date(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(text) ? `${text.replace(" ", "T")}Z` : text);
}
