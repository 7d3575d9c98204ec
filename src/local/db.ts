import { AsyncLocalStorage } from 'node:async_hooks';
import { bindings, DuckDBInstance, JSDuckDBValueConverter, rowObjects, type DuckDBConnection, type DuckDBDataChunk, type DuckDBPreparedStatement, type DuckDBResult } from './duckdb.js';

import { endLease, LEASE_CATALOG, leaseInstance, STATEMENTS_PER_LEASE, type Lease } from './instances.js';
import { compile, ident, sql, type Sql, type SqlValue } from './sql.js';

export type { SqlValue } from './sql.js';
export type SqlParams = Record<string, SqlValue>;
export type Row = Record<string, unknown>;

/**
 * Work on the main thread that grows with a result (a series of 42,000 rows: some 300 ms to
 * convert, 170 ms to compare), done a piece at a turn of the event loop, and one such work at a
 * time: a server answers many tenants on one thread, and a large answer's work held every other
 * request up until it was done (another tenant's small report waited up to 5.9 s behind eight
 * large series). Between two pieces (a DuckDB chunk of 2,048 rows, or as many items) whatever
 * waits runs: the small requests' own steps, and the next piece; the other large works wait for
 * theirs without taking the thread, so a small request's step waits for one piece, not for one
 * piece of each. The lock is the process's, as its main thread is.
 */
let pieceWork: Promise<void> = Promise.resolve();

/** Runs work, main-thread work in pieces (it calls `next` between two, a turn of the event loop), one such work at a time. */
async function inPieces<T>(work: (next: () => Promise<void>) => T | Promise<T>): Promise<T> {
  const before = pieceWork;
  let done!: () => void;
  pieceWork = new Promise((resolve) => (done = resolve));
  await before;
  try {
    return await work(() => new Promise((resolve) => setImmediate(resolve)));
  } finally {
    done();
  }
}

/** items.map(fn), a slice of `size` at a turn, one such map at a time (inPieces): as it is for fewer items. */
export async function mapInTurns<T, U>(items: readonly T[], fn: (item: T, index: number) => U, size = 2048): Promise<U[]> {
  if (items.length <= size) return items.map(fn);
  return inPieces(async (next) => {
    const out: U[] = new Array(items.length);
    for (let i = 0; i < items.length; i++) {
      if (i > 0 && i % size === 0) await next();
      out[i] = fn(items[i]!, i);
    }
    return out;
  });
}

/** The text and parameters of a query (none: undefined, so that it runs unprepared). */
function textOf(query: Sql): { text: string; params?: SqlParams } {
  const compiled = compile(query);
  return { text: compiled.text, params: Object.keys(compiled.params).length ? compiled.params : undefined };
}

/** A query (or a run of queries under one budget) took longer than its time budget and was interrupted. */
export class QueryTimeoutError extends Error {
  constructor(
    readonly budgetMs: number,
    /** True when the budget ran out before the query could start (it waited for a connection or a turn, and never ran). */
    readonly queued = false,
  ) {
    super(
      queued
        ? `the request used up its time budget of ${budgetMs / 1000} s before its query could start (waiting for its turn included); the query did not run`
        : `the query took longer than its time budget of ${budgetMs / 1000} s and was interrupted`,
    );
    this.name = 'QueryTimeoutError';
  }
}

/** The time budget of the work running now: when it ends (performance.now() milliseconds) and how long it is. */
export interface Budget {
  deadline: number;
  budgetMs: number;
}

const budgets = new AsyncLocalStorage<Budget>();

/**
 * Runs work under a time budget that began at startedAt (performance.now(); now
 * when not given, a server passes the request's arrival): every query a
 * Database runs inside it (on any connection, awaited from work) is interrupted
 * when the budget is spent, and fails with QueryTimeoutError at once; a query
 * that would start after that fails at once. Waits inside it (for a pooled
 * connection, a turn, a renderer) read the same deadline (currentBudget). A
 * budget of 0 or less means none. The connection stays usable.
 */
export function withQueryBudget<T>(budgetMs: number, work: () => Promise<T>, startedAt = performance.now()): Promise<T> {
  if (!(budgetMs > 0)) return work();
  return budgets.run({ deadline: startedAt + budgetMs, budgetMs }, work);
}

/** Runs work outside the budget of the work running now (shared work such as opening a file other requests wait for too). */
export function outsideBudget<T>(work: () => T): T {
  return budgets.exit(work);
}

/** The budget of the work running now (see withQueryBudget), undefined outside one. */
export function currentBudget(): Budget | undefined {
  return budgets.getStore();
}

/** How often a query whose budget ran out is interrupted again until it ends (one still waiting for a thread would miss one interrupt). */
const REINTERRUPT_MS = 5;

/** How a Database is opened: its DuckDB worker threads (undefined: one per core), its memory_limit in bytes (undefined: DuckDB's default). */
export interface DatabaseOptions {
  threads?: number;
  memoryLimitBytes?: number;
  /** Freed memory goes back to the system in the background (DuckDB's allocator_background_threads). */
  backgroundAllocator?: boolean;
  /**
   * No automatic checkpoint (DuckDB's checkpoint_threshold out of reach). Since DuckDB 1.4 an in-memory
   * database is checkpointed each time its log passes 16 MB: its tables written again and vacuumed,
   * work that a command's database, gone when the command ends, never needs, and that no interrupt
   * stops (Ctrl-C waited for it). A report of a dataset of CSV files, 300,000 to 500,000 orders: a
   * sixth to a quarter less CPU.
   */
  noCheckpoints?: boolean;
  /** An in-memory database on an instance kept for reuse by the process's next one (instances.ts): a command's. */
  reuse?: boolean;
}

/**
 * The database of a command (report, items, data check …), which lives as long as the command: freed
 * memory goes back to the system as the steps go, never checkpointed, and kept for the process's
 * next command (one configuration of instances.ts's kept instances for them all).
 */
export const COMMAND_DATABASE = { backgroundAllocator: true, reuse: true, noCheckpoints: true } as const satisfies DatabaseOptions;

/** A result being streamed, with its connection's count of what ends such a result (`counts.started`) once it started. */
interface Streamed {
  result: DuckDBResult;
  started: number;
}

/**
 * The connections of this process not yet closed. A process that exits (Ctrl-C or SIGTERM, on which
 * bin/convx.js exits with 130 or 143; any process.exit) interrupts their statements on its way out:
 * Node's exit waits for the statement running on a thread of its pool, which a long report would
 * otherwise run to its end, seconds after "interrupted" (DuckDB stops an interrupted one within a
 * few milliseconds).
 */
const open = new Set<DuckDBConnection>();
let interruptedOnExit = false;

/** How many connections of this process are open: those an exit would interrupt. */
export function openConnectionCount(): number {
  return open.size;
}

/** Keyed by connection: a pool's lent view of a Database (pool.ts, Object.create) may be the one that closes it. */
function track(connection: DuckDBConnection): void {
  if (!interruptedOnExit) {
    interruptedOnExit = true;
    process.on('exit', () => open.forEach((each) => each.interrupt()));
  }
  open.add(connection);
}

/** A DuckDB database with the few calls convx needs; every value goes in as a parameter. */
export class Database {
  private constructor(
    private readonly instance: DuckDBInstance,
    readonly connection: DuckDBConnection,
    /** The first Database of an instance owns it; connect() gives siblings that share it. */
    private readonly ownsInstance: boolean,
    /** The instance leased for reuse, and its configuration (instances.ts). */
    private readonly lease?: { lease: Lease; config: Record<string, string> },
  ) {
    track(connection);
  }

  /** `threads`: DuckDB's worker threads (CONVX_THREADS); by default one per core. */
  static async open(path = ':memory:', options: DatabaseOptions = {}): Promise<Database> {
    const config: Record<string, string> = {
      ...(options.threads ? { threads: String(options.threads) } : {}),
      ...(options.memoryLimitBytes ? { memory_limit: `${Math.floor(options.memoryLimitBytes)}B` } : {}),
      ...(options.backgroundAllocator ? { allocator_background_threads: 'true' } : {}),
      ...(options.noCheckpoints ? { checkpoint_threshold: '1000TB' } : {}),
    };
    if (options.reuse && path === ':memory:') {
      const lease = await leaseInstance(config);
      const db = new Database(lease.instance, lease.connection, true, { lease, config });
      // The lease's connection keeps its prepared statements for the next leases (instances.ts).
      db.keepStatements(STATEMENTS_PER_LEASE, lease.statements);
      return db;
    }
    const instance = await DuckDBInstance.create(path, Object.keys(config).length ? config : undefined);
    const connection = await instance.connect();
    await connection.run("SET TimeZone = 'UTC'");
    return new Database(instance, connection, true);
  }

  /** Another connection to the same database, so concurrent work does not queue on one connection. */
  async connect(): Promise<Database> {
    const connection = await this.instance.connect();
    await connection.run("SET TimeZone = 'UTC'");
    if (this.lease) {
      // On the lease's own catalog; an instance shared so is not kept for another lease.
      this.lease.lease.reusable = false;
      await connection.run(compile(sql`USE ${ident(LEASE_CATALOG)}`).text);
    }
    return new Database(this.instance, connection, false);
  }

  /** DuckDB's worker threads of this instance (its `threads` setting), read once. */
  async threads(): Promise<number> {
    this.threadCount ??= this.one<{ t: unknown }>(sql`SELECT CAST(current_setting('threads') AS INTEGER) AS t`).then((row) => Math.max(1, Number(row?.t) || 1));
    return this.threadCount;
  }

  private threadCount?: Promise<number>;

  /** Stops the query running on this connection, if any; it fails with DuckDB's interrupt error (a result being streamed ends: chunks). */
  interrupt(): void {
    this.counts.started++;
    this.connection.interrupt();
  }

  /**
   * Steps still running on this connection after their budget ran out (their caller already
   * has its QueryTimeoutError): the next step, and close(), wait for them. An object, so that
   * a lent view of this Database (pool.ts) shares it.
   */
  private readonly leftover: { running: Set<Promise<unknown>>; closing: boolean } = { running: new Set(), closing: false };

  /**
   * Runs one step of a query under the current budget (see withQueryBudget). When the budget
   * runs out the step fails with QueryTimeoutError at once, and the query is interrupted, again
   * every few ms until it ends: a query still waiting for a DuckDB or libuv thread when the
   * first interrupt came would otherwise run in full once it starts.
   */
  private async bounded<T>(step: () => Promise<T>): Promise<T> {
    const budget = budgets.getStore();
    // A spent budget fails at once, without waiting for an interrupted step to end.
    if (budget && budget.deadline <= performance.now()) throw new QueryTimeoutError(budget.budgetMs, true);
    while (this.leftover.running.size) await Promise.allSettled([...this.leftover.running]);
    if (!budget) return step();
    const left = budget.deadline - performance.now();
    if (left <= 0) throw new QueryTimeoutError(budget.budgetMs, true);
    const running = step();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.interrupt();
        const again = setInterval(() => this.interrupt(), REINTERRUPT_MS);
        const ended = () => {
          clearInterval(again);
          this.leftover.running.delete(running);
          if (this.leftover.closing && !this.leftover.running.size) this.closeNow();
        };
        this.leftover.running.add(running);
        running.then(ended, ended);
        reject(new QueryTimeoutError(budget.budgetMs));
      }, left);
    });
    try {
      return await Promise.race([running, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Prepared statements kept for reuse by SQL text, least recently used first (see keepStatements). */
  private statements?: Map<string, DuckDBPreparedStatement>;
  private statementLimit = 0;

  /**
   * Keeps up to `limit` prepared statements with parameters of this connection for reuse (in
   * `kept`: a leased connection's outlive the lease, instances.ts): a server runs the same few
   * queries with other parameters over and over, and preparing one (parsing, binding, planning)
   * costs a few milliseconds that reuse saves. DuckDB binds a kept statement again when a table it
   * reads changed or its database is another.
   */
  keepStatements(limit: number, kept: Map<string, DuckDBPreparedStatement> = new Map()): void {
    this.statementLimit = limit;
    this.statements = kept;
  }

  /**
   * What ends a result being streamed from this connection: DuckDB closes it when another
   * statement runs on the connection, when the connection is interrupted, and when a leased
   * connection's lease ends (close), and its next fetch then looks like the end (chunks).
   * `started` counts these, statements as they start; `running` holds the statements not yet
   * answered. An object, so that a lent view of this Database (pool.ts) shares it.
   */
  private readonly counts = { started: 0, running: new Set<Promise<unknown>>() };

  /** Runs one statement (onKeptStatement), counted in `counts` from its start to its answer: every statement of this connection comes through here. */
  private async onStatement<T>(sql: string, params: SqlParams | undefined, run: (statement: DuckDBPreparedStatement) => Promise<T>, fresh: () => Promise<T>): Promise<T> {
    this.counts.started++;
    const running = this.onKeptStatement(sql, params, run, fresh);
    this.counts.running.add(running);
    try {
      return await running;
    } finally {
      this.counts.running.delete(running);
    }
  }

  /**
   * Runs sql with its params on a kept statement (prepared anew when none is kept, or when the one
   * kept is in use: a statement runs one execution at a time, and queries may be started on this
   * connection at once), kept again after it; without params or kept statements, as `fresh` runs
   * it (so too a text of several statements, which DuckDB prepares only one by one).
   */
  private async onKeptStatement<T>(sql: string, params: SqlParams | undefined, run: (statement: DuckDBPreparedStatement) => Promise<T>, fresh: () => Promise<T>): Promise<T> {
    const cache = this.statements;
    if (!params || !cache) return fresh();
    const kept = cache.get(sql);
    if (kept) cache.delete(sql);
    let statement = kept;
    try {
      statement ??= await this.connection.prepare(sql);
    } catch (error) {
      if (/multiple statements/i.test(String(error))) return fresh();
      throw error;
    }
    try {
      statement.bind(params);
      return await run(statement);
    } finally {
      // Kept without its values: a large one (a validation's list of ids) would stay in memory with it.
      statement.clearBindings();
      this.keep(cache, sql, statement);
    }
  }

  /** Keeps a statement once its execution is over, the least recently used one going beyond the limit (one of the same SQL already kept: this one goes). */
  private keep(cache: Map<string, DuckDBPreparedStatement>, sql: string, statement: DuckDBPreparedStatement): void {
    if (cache.has(sql)) return statement.destroySync();
    if (cache.size >= this.statementLimit) {
      const [oldest, evicted] = cache.entries().next().value as [string, DuckDBPreparedStatement];
      cache.delete(oldest);
      evicted.destroySync();
    }
    cache.set(sql, statement);
  }

  /** A statement's result, materialised or to stream. */
  private async result(sql: string, params: SqlParams | undefined, how: 'run' | 'stream' = 'run'): Promise<DuckDBResult> {
    return this.onStatement(
      sql,
      params,
      (statement) => (how === 'stream' ? statement.stream() : statement.run()),
      () => (how === 'stream' ? this.connection.stream(sql, params) : this.connection.run(sql, params)),
    );
  }

  async exec(query: Sql): Promise<void> {
    const { text: sql, params } = textOf(query);
    await this.bounded(() => this.result(sql, params));
  }

  async all<T = Row>(query: Sql): Promise<T[]> {
    const { text: sql, params } = textOf(query);
    const result = await this.bounded(() =>
      this.onStatement(
        sql,
        params,
        (statement) => statement.run(),
        () => this.connection.run(sql, params),
      ),
    );
    if (result.chunkCount <= 1) return rowObjects(result) as T[];
    // a chunk (2,048 rows) at a turn, one large result at a time (inPieces): other requests run between chunks
    return inPieces(async (next) => {
      const rows: Row[] = [];
      for (let c = 0; c < result.chunkCount; c++) {
        if (c > 0) await next();
        rowObjects(result, c, c + 1, rows);
      }
      return rows as T[];
    });
  }

  /**
   * A query of INTEGER or DOUBLE columns (not BIGINT: its values are bigints) as one Float64Array per column, read chunk by
   * chunk from DuckDB's vectors without a JavaScript value per cell; NULL is NaN.
   */
  async numberColumns(query: Sql): Promise<Float64Array[]> {
    const streamed = await this.streamed(query);
    let columns: Float64Array[] = Array.from({ length: streamed.result.columnCount }, () => new Float64Array(2048));
    let rows = 0;
    for await (const chunk of this.chunks(streamed)) {
      const n = chunk.rowCount;
      if (rows + n > columns[0]!.length) columns = columns.map((c) => grown(c, Math.max(2 * c.length, rows + n)));
      columns.forEach((column, c) => {
        const vector = chunk.getColumnVector(c);
        for (let i = 0; i < n; i++) column[rows + i] = (vector.getItem(i) as number | null) ?? NaN;
      });
      rows += n;
    }
    return columns.map((c) => c.slice(0, rows));
  }

  /**
   * Streams a query chunk by chunk (about 2048 rows each) as one array of values per column
   * (VARCHAR strings, INTEGER and DOUBLE numbers, BOOLEAN booleans, NULL null): no row objects.
   */
  async *columnChunks(query: Sql): AsyncGenerator<unknown[][]> {
    for await (const chunk of this.chunks(await this.streamed(query))) yield Array.from({ length: chunk.columnCount }, (_, c) => chunk.getColumnValues(c));
  }

  /** A query's result, to read chunk by chunk (chunks), with what else had run on its connection when it started. */
  private async streamed(query: Sql): Promise<Streamed> {
    const { text: sql, params } = textOf(query);
    return this.bounded(async () => {
      // A statement not yet answered may run after the stream's (DuckDB takes a connection's statements one at a time, in any order) and end it: the stream
      // waits for it. No await when none is left, so that the stream's statement is counted at once, before any started after it.
      while (this.counts.running.size) await Promise.allSettled([...this.counts.running]);
      // The count once the stream's own statement is counted (onStatement, at once).
      const started = this.counts.started + 1;
      return { result: await this.result(sql, params, 'stream'), started };
    });
  }

  /**
   * A streamed result chunk by chunk, each fetch within the time budget; none when it has no rows.
   * A statement started on the connection while the result is read, an interrupt or the close
   * (counts) ends it in DuckDB, whose next fetch then gives no rows as at the end: that is an error
   * here, at the first fetch after it, never a shorter result.
   */
  private async *chunks({ result, started }: Streamed): AsyncGenerator<DuckDBDataChunk> {
    for (;;) {
      const chunk = await this.bounded(() => result.fetchChunk());
      if (this.counts.started !== started) throw new Error('internal: a result streamed from a connection was ended early by another query on it, an interrupt or its close');
      if (!chunk || chunk.rowCount === 0) return;
      yield chunk;
    }
  }

  /** The names of a query's columns, in order (the query runs: a LIMIT 0 reads none of its rows). */
  async columnNames(query: Sql): Promise<string[]> {
    const { text: sql, params } = textOf(query);
    const result = await this.bounded(() => this.result(sql, params));
    return result.columnNames();
  }

  /**
   * Runs a CREATE TABLE AS or an INSERT and gives the number of rows it wrote: DuckDB answers such
   * a statement with one row of that count, in a column "Count" (the result's rowsChanged is 0
   * for CREATE TABLE AS).
   */
  async rowsWritten(query: Sql): Promise<number> {
    const row = await this.one<{ Count: bigint | number }>(query);
    return Number(row?.Count ?? 0);
  }

  async one<T = Row>(query: Sql): Promise<T | undefined> {
    const rows = await this.all<T>(query);
    return rows[0];
  }

  /** Streams a query chunk by chunk (about 2048 rows each), never holding the whole result. */
  async *stream<T = Row>(query: Sql): AsyncGenerator<T> {
    const streamed = await this.streamed(query);
    const names = streamed.result.deduplicatedColumnNames();
    for await (const chunk of this.chunks(streamed)) {
      for (const values of chunk.convertRows(JSDuckDBValueConverter)) {
        const row: Row = {};
        names.forEach((name, i) => (row[name] = values[i]));
        yield row as T;
      }
    }
  }

  /**
   * Streams a query of one BLOB column (a text's UTF-8 bytes: `encode(text)`, no NULL) as one
   * buffer of the rows' bytes per chunk (about 2048 rows): no row objects, and no string made of
   * each value to be encoded again on its way out (53 MB of lines read and written: 286-304 ms as
   * strings, 213-221 ms as bytes).
   */
  async *streamBytes(query: Sql): AsyncGenerator<{ text: Uint8Array; rows: number }> {
    for await (const chunk of this.chunks(await this.streamed(query))) yield { text: blobBytes(chunk), rows: chunk.rowCount };
  }

  /** Resolves once no interrupted step runs on this connection any more (at once when none does). */
  async settled(): Promise<void> {
    while (this.leftover.running.size) await Promise.allSettled([...this.leftover.running]);
  }

  /** Closes this connection, and the database itself when this is its owner (once the interrupted steps still running end). */
  close(): void {
    this.counts.started++;
    if (this.leftover.running.size) this.leftover.closing = true;
    else this.closeNow();
  }

  private closeNow(): void {
    open.delete(this.connection);
    // A lease's statements stay with its connection (instances.ts).
    if (this.ownsInstance && this.lease) return endLease(this.lease.lease, this.lease.config);
    for (const statement of this.statements?.values() ?? []) statement.destroySync();
    this.statements?.clear();
    this.connection.closeSync();
    if (this.ownsInstance) this.instance.closeSync();
  }
}

/**
 * The bytes of a chunk's first column (BLOB, no NULL) end to end, in one buffer. A value of more
 * than 12 bytes is a pointer in its 16-byte string_t (length, 4-byte prefix, pointer), and the
 * values DuckDB hands out one after another mostly lie one after another in its memory (a year of
 * the mid data's lines: 8 breaks in a chunk of 2048): each run of such values, every one starting
 * where the one before ends, is copied in one call instead of one per value (the package's
 * getItemBytes: a native call and an ArrayBuffer per value). The copy covers exactly the run's
 * values. 95 MB of jsonl lines: about 110 → 40 ms of JavaScript.
 */
function blobBytes(chunk: DuckDBDataChunk): Uint8Array {
  const rows = chunk.rowCount;
  const vector = bindings.data_chunk_get_vector(chunk.chunk, 0);
  const mask = bindings.vector_get_validity(vector, Math.ceil(rows / 64) * 8);
  const data = bindings.vector_get_data(vector, rows * 16);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const valid = (k: number) => !mask || (mask[k >> 3]! & (1 << (k & 7))) !== 0;
  const parts: Uint8Array[] = [];
  for (let i = 0; i < rows; ) {
    if (!valid(i)) throw new Error('internal: a line of the engine is NULL');
    const length = view.getUint32(i * 16, true);
    if (length <= 12) {
      // inline: a view of the vector's memory, copied by the concat below while the chunk lives
      parts.push(data.subarray(i * 16 + 4, i * 16 + 4 + length));
      i++;
      continue;
    }
    let end = view.getBigUint64(i * 16 + 8, true) + BigInt(length);
    let total = length;
    let j = i + 1;
    for (; j < rows; j++) {
      const next = view.getUint32(j * 16, true);
      if (next <= 12 || !valid(j) || view.getBigUint64(j * 16 + 8, true) !== end) break;
      end += BigInt(next);
      total += next;
    }
    parts.push(bindings.get_data_from_pointer(data.buffer as ArrayBuffer, data.byteOffset + i * 16 + 8, total));
    i = j;
  }
  return Buffer.concat(parts);
}

/** A copy of an array in a longer one. */
function grown(array: Float64Array, length: number): Float64Array {
  const longer = new Float64Array(length);
  longer.set(array);
  return longer;
}
