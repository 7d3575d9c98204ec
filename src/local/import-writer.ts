/**
 * Writing convx's own dataset file (`convx data import DIR --into FILE.duckdb`; imported.ts reads
 * it): the dataset read, checked and attributed as `convx report` would, then its typed tables,
 * each scope's attribution and what the file holds, written under a temporary name and renamed
 * into place when complete.
 */
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DataError, UsageError } from '../errors.js';
import { packageVersion } from '../version.js';
import { ATTRIBUTED_TABLES, buildScopes, type Scope } from './attribution.js';
import type { Database } from './db.js';
import { firstLine, type DataIssue, type Dataset } from './dataset.js';
import { IMPORT_FORMAT, IMPORT_VERSION, META, type ImportedScope, type ImportedTable, type ImportMeta } from './imported.js';
import { openDataset } from './open.js';
import { TABLE_NAMES, TABLES } from './schema.js';
import { EMPTY, ident, literal, sql, table } from './sql.js';

export interface ImportSummary {
  file: string;
  bytes: number;
  tables: ImportedTable[];
  scopes: ImportedScope[];
  findings: DataIssue[];
}

export interface ImportOptions {
  referenceCurrency?: string;
  /** Replace an existing file. */
  force?: boolean;
  /** Says what the import is doing (a phase per call), for a progress line. */
  onPhase?: (phase: string) => void;
  /** DuckDB threads (CONVX_THREADS); by default one per core. */
  threads?: number;
}

/**
 * Reads, checks and attributes the dataset at dir as `convx report` would, then
 * writes the file: first under a temporary name beside it, renamed into place
 * when complete, so a failed import leaves nothing half-written.
 */
export async function importDataset(dir: string, into: string, options: ImportOptions = {}): Promise<ImportSummary> {
  checkTarget(into, options.force ?? false);
  const phase = options.onPhase ?? (() => undefined);
  const staging = `${into}.tmp-${process.pid}`;
  const removeStaging = () => {
    for (const file of [staging, `${staging}.wal`]) rmSync(file, { force: true });
  };
  removeStaging();
  removeAbandonedStaging(into);
  phase('reading and checking the files');
  const dataset = await openDataset(dir, [], { materialise: true, ...(options.threads ? { threads: options.threads } : {}) });
  const db = dataset.db;
  try {
    phase('attributing');
    const scopes = await buildScopes(dataset, options.referenceCurrency !== undefined ? { referenceCurrency: options.referenceCurrency } : {});
    phase('writing');
    try {
      await db.exec(sql`ATTACH ${literal(staging)} AS out`);
    } catch (error) {
      throw new DataError(`cannot write ${into}: ${firstLine(error)}`);
    }
    const tables = await writeTables(db, dataset);
    const stored: ImportedScope[] = [];
    for (const scope of scopes.values()) {
      stored.push({ plugin: scope.plugin, schema: scope.schema, referenceCurrency: scope.referenceCurrency });
      if (scope.reports) await writeAttribution(db, scope);
    }
    await writeMeta(db, {
      format: IMPORT_FORMAT,
      version: IMPORT_VERSION,
      convx: packageVersion(),
      source: dir,
      importedAt: new Date().toISOString(),
      tables,
      findings: dataset.findings,
      scopes: stored,
    });
    await db.exec(sql`DETACH out`);
    renameSync(staging, into);
    return { file: into, bytes: statSync(into).size, tables, scopes: stored, findings: dataset.findings };
  } catch (error) {
    try {
      await db.exec(sql`DETACH DATABASE IF EXISTS out`);
    } catch {
      // already gone
    }
    removeStaging();
    throw error;
  } finally {
    db.close();
  }
}

/**
 * Refuses a target before any work: a directory; a name that does not end in .duckdb (the name
 * says what the file is: `--data shop.duckdb` reads as convx's dataset file to whoever sees it,
 * and a slip such as `--into exports/orders.csv` or `--into shop` never becomes a DuckDB file);
 * an existing file without force; a folder that is not there.
 */
function checkTarget(into: string, force: boolean): void {
  const exists = existsSync(into);
  if (exists && !statSync(into).isFile()) throw new UsageError(`--into ${into} is a directory; give a file name such as ${into}.duckdb`);
  if (!/\.duckdb$/i.test(into)) {
    throw new UsageError(
      `--into ${into}: the file name must end in .duckdb (convx writes a DuckDB database file, and its name says so to whoever passes it to --data)`,
      [],
      `give a name such as ${into.replace(/\.[^./\\]*$/, '')}.duckdb`,
    );
  }
  if (exists && !force) throw new UsageError(`${into} exists; choose another --into or pass --force to replace it`);
  const folder = dirname(into);
  if (!existsSync(folder)) throw new UsageError(`--into ${into}: the folder ${folder} does not exist`, [], `create it first (mkdir -p ${folder}), or choose another --into`);
  if (!statSync(folder).isDirectory()) throw new UsageError(`--into ${into}: ${folder} is not a folder`);
}

/** The typed tables into the file (those with a row order in it), and what each holds. */
async function writeTables(db: Database, dataset: Dataset): Promise<ImportedTable[]> {
  const tables: ImportedTable[] = [];
  for (const name of TABLE_NAMES) {
    const loaded = dataset.tables.get(name);
    if (!loaded) continue;
    const order = TABLES[name].unordered ? EMPTY : sql`ORDER BY row_id`;
    await db.exec(sql`CREATE TABLE ${table(name, 'out.main')} AS SELECT * FROM ${table(name)} ${order}`);
    const count = await db.one<{ n: bigint }>(sql`SELECT count(*) AS n FROM ${table(name, 'out.main')}`);
    tables.push({ table: name, display: loaded.source.display, hasPluginId: loaded.hasPluginId, rows: Number(count?.n ?? 0) });
  }
  return tables;
}

/** What the file holds, one row per key with its JSON value. */
async function writeMeta(db: Database, meta: ImportMeta): Promise<void> {
  await db.exec(sql`CREATE TABLE out.main.${ident(META)} (key VARCHAR, value VARCHAR)`);
  for (const [key, value] of Object.entries(meta)) {
    await db.exec(sql`INSERT INTO out.main.${ident(META)} VALUES (${key}, ${JSON.stringify(value)})`);
  }
}

/** Staging files of imports into the same target whose process is gone (killed, crashed). */
function removeAbandonedStaging(into: string): void {
  const prefix = `${basename(into)}.tmp-`;
  let names: string[];
  try {
    names = readdirSync(dirname(into));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^(\d+)(\.wal)?$/.exec(name.startsWith(prefix) ? name.slice(prefix.length) : '')?.[1]);
    if (!pid || pid === process.pid || alive(pid)) continue;
    rmSync(join(dirname(into), name), { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, owned by someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A scope's attribution into the file, in the order the scope holds it (conv in time order, the
 * per-day sums by day), with an index on conv's order_id for look-ups of one order.
 */
async function writeAttribution(db: Database, scope: Scope): Promise<void> {
  const schema = sql`out.${ident(scope.schema)}`;
  await db.exec(sql`CREATE SCHEMA ${schema}`);
  for (const name of ATTRIBUTED_TABLES) {
    await db.exec(sql`CREATE TABLE ${schema}.${ident(name)} AS SELECT * FROM ${scope.relation(name)}`);
  }
  await db.exec(sql`CREATE INDEX conv_order_id ON ${schema}.conv (order_id)`);
}
