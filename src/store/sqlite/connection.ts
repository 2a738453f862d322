import type { SqlResultSet } from "@prisma/driver-adapter-utils";
import Sqlite from "better-sqlite3";
import { columnTypes, fromSqlite } from "./values.js";

/**
 * One better-sqlite3 connection with its prepared statements: Prisma sends the same few statement texts over and
 * over, and compiling one costs more than running it. The cache keeps the most recently used `cacheSize`.
 */
export class Connection {
  private readonly statements = new Map<string, Sqlite.Statement<unknown[]>>();

  constructor(
    readonly database: Sqlite.Database,
    private readonly cacheSize: number,
  ) {
    database.defaultSafeIntegers(true); // integers past 2^53 arrive intact; values.ts narrows the rest
  }

  /**
   * Whether the statement is a query that changes nothing, so another connection may answer it. PRAGMAs count as
   * read-only to SQLite even when they set the connection's state (locking_mode), so they stay where they were sent;
   * so does a statement this connection cannot prepare (a table another connection's open transaction creates).
   */
  readsOnly(sql: string): boolean {
    let statement: Sqlite.Statement<unknown[]>;
    try {
      statement = this.prepared(sql);
    } catch {
      return false;
    }
    return statement.reader && statement.readonly && !/^\s*pragma\b/i.test(sql);
  }

  query(sql: string, args: unknown[]): SqlResultSet {
    const statement = this.prepared(sql);
    if (!statement.reader) {
      statement.run(args);
      return { columnNames: [], columnTypes: [], rows: [] };
    }
    const columns = statement.columns();
    const rows = statement.raw(true).all(args) as unknown[][];
    const types = columnTypes(
      columns.map((column) => column.type),
      rows,
    );
    for (const row of rows) fromSqlite(row, types);
    return { columnNames: columns.map((column) => column.name), columnTypes: types, rows };
  }

  /** The rows a statement returns, if it returns any (a query, RETURNING); else the rows it changed. */
  run(sql: string, args: unknown[]): SqlResultSet | number {
    return this.prepared(sql).reader ? this.query(sql, args) : this.execute(sql, args);
  }

  execute(sql: string, args: unknown[] = []): number {
    return this.prepared(sql).run(args).changes;
  }

  close(): void {
    this.statements.clear();
    this.database.close();
  }

  private prepared(sql: string): Sqlite.Statement<unknown[]> {
    let statement = this.statements.get(sql);
    if (statement) {
      this.statements.delete(sql); // re-inserted last: the map's order is the order of use
    } else {
      statement = this.database.prepare(sql);
      if (this.statements.size >= this.cacheSize) this.statements.delete(this.statements.keys().next().value!);
    }
    this.statements.set(sql, statement);
    return statement;
  }
}
