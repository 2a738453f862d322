import { Prisma, type Provider } from "../store/database.js";

/**
 * Parameters of the hand-written statements, as each database takes them. PostgreSQL cannot infer the type of a
 * parameter selected into a column (`INSERT … SELECT $1`), so those carry casts; SQLite stores what it is given, and
 * Prisma's adapter gives dates and JSON the same text its own queries write.
 */
export interface Dialect {
  time(value: Date | null): Prisma.Sql;
  json(value: unknown): Prisma.Sql;
  int(value: number | null): Prisma.Sql;
}

export const dialects: Record<Provider, Dialect> = {
  sqlite: {
    time: (value) => Prisma.sql`${value}`,
    json: (value) => Prisma.sql`${jsonText(value)}`,
    int: (value) => Prisma.sql`${value}`,
  },
  postgresql: {
    time: (value) => Prisma.sql`${value}::timestamp(3)`,
    json: (value) => Prisma.sql`${jsonText(value)}::jsonb`,
    int: (value) => Prisma.sql`${value}::int`,
  },
};

function jsonText(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
