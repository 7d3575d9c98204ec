import { DuckDBInstance, JSDuckDBValueConverter, type DuckDBConnection } from '@duckdb/node-api';

export type SqlValue = string | number | boolean | null;
export type SqlParams = Record<string, SqlValue>;
export type Row = Record<string, unknown>;

/** Quotes an identifier we generated or validated (column names found in a file). */
export function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Builds "IN ($p0, $p1)" placeholders for a list, adding the values to params. */
export function inList(params: SqlParams, prefix: string, values: readonly string[]): string {
  const names = values.map((value, i) => {
    const key = `${prefix}${i}`;
    params[key] = value;
    return `$${key}`;
  });
  return `(${names.join(', ')})`;
}

/** A DuckDB database with the few calls convx needs; every value goes in as a parameter. */
export class Database {
  private constructor(
    private readonly instance: DuckDBInstance,
    readonly connection: DuckDBConnection,
    /** The first Database of an instance owns it; connect() gives siblings that share it. */
    private readonly ownsInstance: boolean,
  ) {}

  static async open(path = ':memory:'): Promise<Database> {
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    await connection.run("SET TimeZone = 'UTC'");
    return new Database(instance, connection, true);
  }

  /** Another connection to the same database, so concurrent work does not queue on one connection. */
  async connect(): Promise<Database> {
    const connection = await this.instance.connect();
    await connection.run("SET TimeZone = 'UTC'");
    return new Database(this.instance, connection, false);
  }

  async exec(sql: string, params?: SqlParams): Promise<void> {
    await this.connection.run(sql, params);
  }

  async all<T = Row>(sql: string, params?: SqlParams): Promise<T[]> {
    const reader = await this.connection.runAndReadAll(sql, params);
    return reader.getRowObjectsJS() as T[];
  }

  async one<T = Row>(sql: string, params?: SqlParams): Promise<T | undefined> {
    const rows = await this.all<T>(sql, params);
    return rows[0];
  }

  /** Streams a query chunk by chunk (about 2048 rows each), never holding the whole result. */
  async *stream<T = Row>(sql: string, params?: SqlParams): AsyncGenerator<T> {
    const result = await this.connection.stream(sql, params);
    const names = result.deduplicatedColumnNames();
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) return;
      for (const values of chunk.convertRows(JSDuckDBValueConverter)) {
        const row: Row = {};
        names.forEach((name, i) => (row[name] = values[i]));
        yield row as T;
      }
    }
  }

  /** Closes this connection, and the database itself when this is its owner. */
  close(): void {
    this.connection.closeSync();
    if (this.ownsInstance) this.instance.closeSync();
  }
}
