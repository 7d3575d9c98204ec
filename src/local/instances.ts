/**
 * DuckDB instances kept for the next command of the same process (a test suite runs thousands in
 * one): creating an instance registers DuckDB's whole catalog of functions and closing it frees it
 * again, some 10 to 15 ms a command, more than most of a small dataset's statements. A reused
 * instance gives each lease a fresh in-memory catalog of its own, made the connection's default
 * (USE), so that every unqualified name lands there as it would in a new instance; when the lease
 * ends, that catalog and every other database the command attached are detached (its temporary
 * objects go with its connection), and the instance waits, idle, for a lease of the same
 * configuration. Only in-memory databases are leased.
 */
import { DuckDBInstance, type DuckDBConnection } from './duckdb.js';
import { compile, ident, join, sql } from './sql.js';

/**
 * At most this many instances wait idle; beyond it, the one idle longest is closed. Enough for a
 * process that runs commands of both configurations (a query's, with the background allocator,
 * and an import's) and holds a few datasets open at once (a test file): with 2, such a run made
 * a new instance (some 10 ms of CPU) for many of its commands.
 */
const MAX_IDLE = 6;

/** Idle instances with their configuration, the one idle longest first. */
const idle: { key: string; instance: DuckDBInstance }[] = [];
/** Leases being ended: their DETACH runs after close() returned, and the next lease waits for it. */
let ending: Promise<void> = Promise.resolve();
let catalogs = 0;

/** An instance and a connection whose default catalog is the lease's own. */
export interface Lease {
  instance: DuckDBInstance;
  connection: DuckDBConnection;
  /** Its catalog, for the USE of another connection to the instance. */
  catalog: string;
  /** False once another connection shares the instance: it is closed, not kept, when the lease ends. */
  reusable: boolean;
}

/** An instance of this configuration (an idle one, else a new one) with a connection on a catalog of its own. */
export async function leaseInstance(config: Record<string, string>): Promise<Lease> {
  await ending;
  const key = JSON.stringify(config);
  const at = idle.map((entry) => entry.key).lastIndexOf(key);
  const kept = at < 0 ? undefined : idle.splice(at, 1)[0]!.instance;
  const instance = kept ?? (await DuckDBInstance.create(':memory:', Object.keys(config).length ? config : undefined));
  const catalog = `convx_lease_${++catalogs}`;
  let connection: DuckDBConnection | undefined;
  try {
    connection = await instance.connect();
    await connection.run(compile(sql`SET TimeZone = 'UTC'; ATTACH ':memory:' AS ${ident(catalog)}; USE ${ident(catalog)}`).text);
    return { instance, connection, catalog, reusable: true };
  } catch (error) {
    connection?.closeSync();
    instance.closeSync();
    throw error;
  }
}

/** Ends a lease: its connection closes once its catalogs are detached, after close() returned. */
export function endLease(lease: Lease, config: Record<string, string>): void {
  // A failure to end one lease never stops the next from starting.
  ending = ending.then(() => keepOrClose(lease, JSON.stringify(config))).catch(() => undefined);
}

/** Detaches every database the lease attached, its own catalog too, and keeps the instance idle (or closes it). */
async function keepOrClose({ instance, connection, reusable }: Lease, key: string): Promise<void> {
  let clean = false;
  try {
    if (reusable) {
      const attached = await connection.runAndReadAll("SELECT database_name FROM duckdb_databases() WHERE NOT internal AND database_name <> 'memory'");
      const detach = attached.getRows().map((row) => sql`DETACH ${ident(String(row[0]))}`);
      await connection.run(compile(sql`USE memory; ${join(detach, sql`; `)}`).text);
      clean = true;
    }
  } catch {
    // not clean: closed below
  }
  connection.closeSync();
  if (!clean) return instance.closeSync();
  idle.push({ key, instance });
  if (idle.length > MAX_IDLE) idle.shift()!.instance.closeSync();
}
