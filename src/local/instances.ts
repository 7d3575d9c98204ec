/**
 * DuckDB instances kept for the next command of the same process (a test suite runs thousands in
 * one): creating an instance registers DuckDB's whole catalog of functions and closing it frees it
 * again, some 10 to 15 ms a command, more than most of a small dataset's statements. A reused
 * instance gives each lease a fresh in-memory catalog of its own, made the connection's default
 * (USE), so that every unqualified name lands there as it would in a new instance; when the lease
 * ends, that catalog and every other database the command attached are detached, its temporary
 * tables and views dropped and its session variables reset (LEFT), and the instance waits, idle,
 * with its connection, for a lease of the same configuration. Only in-memory databases are leased.
 *
 * The connection keeps its prepared statements from one lease to the next (`statements`, used by
 * db.ts), without their values: preparing a statement with parameters for each command binds and
 * plans it twice, once when it is prepared and again when it runs (DuckDB binds it again where a
 * parameter's type was inferred, to see the value, and whenever a database it reads is another,
 * or changed, since it was planned). A kept statement of convx's reads the lease's catalog, so it
 * is planned only when it runs, against the databases of the lease running it (every lease's
 * catalog has one name: see LEASE_CATALOG); one whose parameters are all cast and which reads no
 * database would keep its first plan, made under the same settings (every lease's are the same).
 * It holds no detached database or file open.
 */
import { DuckDBInstance, rowObjects, type DuckDBConnection, type DuckDBPreparedStatement } from './duckdb.js';
import { compile, ident, join, sql, type Sql } from './sql.js';

/**
 * At most this many instances wait idle; beyond it, the one idle longest is closed. Enough for a
 * process that runs commands of both configurations (a command's, db.ts's COMMAND_DATABASE,
 * and an import's) and holds a few datasets open at once (a test file): with 2, such a run made
 * a new instance (some 10 ms of CPU) for many of its commands.
 */
const MAX_IDLE = 6;

/**
 * Prepared statements a leased connection keeps for the next leases, by SQL text, least recently
 * used first: the few dozen statements with parameters of the commands a process runs.
 */
export const STATEMENTS_PER_LEASE = 64;

/** An instance with the connection its leases use and the statements it keeps. */
interface Kept {
  instance: DuckDBInstance;
  connection: DuckDBConnection;
  statements: Map<string, DuckDBPreparedStatement>;
}

/** Idle instances with their configuration, the one idle longest first. */
const idle: (Kept & { key: string })[] = [];
/** Leases being ended: their DETACH runs after close() returned, and the next lease waits for it. */
let ending: Promise<void> = Promise.resolve();
/**
 * The name of every lease's own catalog: the same on every lease of an instance, so that a kept
 * statement finds it by name and, seeing another database under it (DuckDB compares the
 * database's identity), binds and plans again; under a new name it would fail on the old one.
 */
export const LEASE_CATALOG = 'convx_lease';

/** An instance and a connection whose default catalog is the lease's own. */
export interface Lease extends Kept {
  /** False once another connection shares the instance: it is closed, not kept, when the lease ends. */
  reusable: boolean;
}

/** An instance of this configuration (an idle one, else a new one) with a connection on a catalog of its own. */
export async function leaseInstance(config: Record<string, string>): Promise<Lease> {
  await ending;
  const key = JSON.stringify(config);
  const at = idle.map((entry) => entry.key).lastIndexOf(key);
  const kept = at < 0 ? undefined : idle.splice(at, 1)[0]!;
  const instance = kept?.instance ?? (await DuckDBInstance.create(':memory:', Object.keys(config).length ? config : undefined));
  const statements = kept?.statements ?? new Map<string, DuckDBPreparedStatement>();
  let connection: DuckDBConnection | undefined = kept?.connection;
  try {
    connection ??= await instance.connect();
    await connection.run(compile(sql`SET TimeZone = 'UTC'; ATTACH ':memory:' AS ${ident(LEASE_CATALOG)}; USE ${ident(LEASE_CATALOG)}`).text);
    return { instance, connection, statements, reusable: true };
  } catch (error) {
    close({ instance, connection, statements });
    throw error;
  }
}

/** Closes an instance with its connection and the statements it keeps. */
function close({ instance, connection, statements }: Partial<Kept> & { instance: DuckDBInstance }): void {
  for (const statement of statements?.values() ?? []) statement.destroySync();
  statements?.clear();
  connection?.closeSync();
  instance.closeSync();
}

/** Ends a lease: what it left on its connection (LEFT) goes, after close() returned. */
export function endLease(lease: Lease, config: Record<string, string>): void {
  // A failure to end one lease never stops the next from starting.
  ending = ending.then(() => keepOrClose(lease, JSON.stringify(config))).catch(() => undefined);
}

/**
 * What a lease leaves behind on its connection (which outlives it), and how each goes: every
 * database it attached, its own catalog too, its temporary tables and views, and its session
 * variables (SET VARIABLE). Not looked for, as convx makes none: temporary macros (listing them
 * takes duckdb_functions(), some 12 ms) and sequences, statements of SQL's PREPARE, and session
 * settings other than TimeZone (set on every lease); a lease that made one would pass it on.
 */
const LEFT = `SELECT 'database' AS kind, database_name AS name FROM duckdb_databases() WHERE NOT internal AND database_name <> 'memory'
  UNION ALL SELECT 'table', table_name FROM duckdb_tables() WHERE temporary
  UNION ALL SELECT 'view', view_name FROM duckdb_views() WHERE temporary AND NOT internal
  UNION ALL SELECT 'variable', name FROM duckdb_variables()`;
const REMOVE: Record<string, (name: string) => Sql> = {
  database: (name) => sql`DETACH ${ident(name)}`,
  table: (name) => sql`DROP TABLE temp.main.${ident(name)}`,
  view: (name) => sql`DROP VIEW temp.main.${ident(name)}`,
  variable: (name) => sql`RESET VARIABLE ${ident(name)}`,
};

/** Removes what the lease left on its connection (LEFT), and keeps the instance idle with it (or closes it). */
async function keepOrClose({ instance, connection, statements, reusable }: Lease, key: string): Promise<void> {
  let clean = false;
  try {
    if (reusable) {
      const left = rowObjects(await connection.run(LEFT)).map(({ kind, name }) => REMOVE[String(kind)]!(String(name)));
      await connection.run(compile(sql`USE memory; ${join(left, sql`; `)}`).text);
      clean = true;
    }
  } catch {
    // not clean: closed below
  }
  if (!clean) return close({ instance, connection, statements });
  idle.push({ key, instance, connection, statements });
  if (idle.length > MAX_IDLE) close(idle.shift()!);
}
