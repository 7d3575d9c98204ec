/**
 * convx's own dataset file (`convx data import DIR --into FILE.duckdb`): the
 * typed tables of a checked dataset, and per plugin every transaction already
 * attributed (conv, in time order, with an index on order_id), the source
 * identities and per-day sums for reports. `--data FILE.duckdb` reads it in
 * place (attached read-only): nothing to parse, check or attribute, so a
 * command or a server starts at once and answers as it would from the files.
 */
import { closeSync, existsSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DataError, UsageError } from '../errors.js';
import { field, QUERY_PARAMETERS } from '../model/parameters.js';
import { packageVersion } from '../version.js';
import { ATTRIBUTED_TABLES, buildScopes, type Scope } from './attribution.js';
import { Database, ident, sqlString } from './db.js';
import { Dataset, firstLine, type DataIssue, type LoadedTable } from './dataset.js';
import { TABLE_NAMES, TABLES, type TableName } from './schema.js';
import { ident as sqlIdent, sql, trusted, type Sql } from './sql.js';

/** Names the file's layout; a file of another version is refused with a word on importing again. */
export const IMPORT_FORMAT = 'convx-dataset';
export const IMPORT_VERSION = 2;
/** The catalog name an imported file is attached under. */
const ALIAS = 'imported';
/** The table of the file that says what it holds (one row per key, JSON values). */
const META = 'convx_dataset';

interface ImportedTable {
  table: TableName;
  /** How the source was named (orders.parquet, orders/ ...), for messages. */
  display: string;
  hasPluginId: boolean;
  rows: number;
}

interface ImportedScope {
  /** The plugin, or null for a dataset without plugin_id (served as the single plugin). */
  plugin: string | null;
  schema: string;
  referenceCurrency: string;
}

export interface ImportMeta {
  format: typeof IMPORT_FORMAT;
  version: number;
  convx: string;
  /** The dataset directory as it was given to the import. */
  source: string;
  importedAt: string;
  tables: ImportedTable[];
  findings: DataIssue[];
  scopes: ImportedScope[];
}

export interface ImportSummary {
  file: string;
  bytes: number;
  tables: ImportedTable[];
  scopes: ImportedScope[];
  findings: DataIssue[];
}

/** True for a file that starts like a DuckDB database (its header says DUCK at byte 8). */
export function isDuckDbFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    const fd = openSync(path, 'r');
    try {
      const head = Buffer.alloc(12);
      const read = readSync(fd, head, 0, 12, 0);
      return read === 12 && head.subarray(8, 12).toString('latin1') === 'DUCK';
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

export interface ImportOptions {
  referenceCurrency?: string;
  /** Replace an existing file. */
  force?: boolean;
  /** Says what the import is doing (a phase per call), for a progress line. */
  onPhase?: (phase: string) => void;
}

/**
 * Reads, checks and attributes the dataset at dir as `convx report` would, then
 * writes the file: first under a temporary name beside it, renamed into place
 * when complete, so a failed import leaves nothing half-written.
 */
export async function importDataset(dir: string, into: string, options: ImportOptions = {}): Promise<ImportSummary> {
  if (existsSync(into)) {
    if (!statSync(into).isFile()) throw new UsageError(`--into ${into} is a directory; give a file name such as ${into}.duckdb`);
    if (!options.force) throw new UsageError(`${into} exists; choose another --into or pass --force to replace it`);
  }
  const phase = options.onPhase ?? (() => undefined);
  const staging = `${into}.tmp-${process.pid}`;
  const removeStaging = () => {
    for (const file of [staging, `${staging}.wal`]) rmSync(file, { force: true });
  };
  removeStaging();
  removeAbandonedStaging(into);
  const { openDataset } = await import('./open.js');
  phase('reading and checking the files');
  const dataset = await openDataset(dir, [], { materialise: true });
  const db = dataset.db;
  try {
    phase('attributing');
    const scopes = await buildScopes(dataset, options.referenceCurrency !== undefined ? { referenceCurrency: options.referenceCurrency } : {});
    phase('writing');
    try {
      await db.exec(`ATTACH ${sqlString(staging)} AS out`);
    } catch (error) {
      throw new DataError(`cannot write ${into}: ${firstLine(error)}`);
    }
    const tables: ImportedTable[] = [];
    for (const name of TABLE_NAMES) {
      const loaded = dataset.tables.get(name);
      if (!loaded) continue;
      const order = TABLES[name].unordered ? '' : 'ORDER BY row_id';
      await db.exec(`CREATE TABLE out.main.${ident(`t_${name}`)} AS SELECT * FROM ${ident(`t_${name}`)} ${order}`);
      const count = await db.one<{ n: bigint }>(`SELECT count(*) AS n FROM out.main.${ident(`t_${name}`)}`);
      tables.push({ table: name, display: loaded.source.display, hasPluginId: loaded.hasPluginId, rows: Number(count?.n ?? 0) });
    }
    const stored: ImportedScope[] = [];
    for (const scope of scopes.values()) {
      stored.push({ plugin: scope.plugin, schema: scope.schema, referenceCurrency: scope.referenceCurrency });
      if (scope.reports) await writeAttribution(db, scope);
    }
    const meta: ImportMeta = {
      format: IMPORT_FORMAT,
      version: IMPORT_VERSION,
      convx: packageVersion(),
      source: dir,
      importedAt: new Date().toISOString(),
      tables,
      findings: dataset.findings,
      scopes: stored,
    };
    await db.exec(`CREATE TABLE out.main.${META} (key VARCHAR, value VARCHAR)`);
    for (const [key, value] of Object.entries(meta)) {
      await db.exec(`INSERT INTO out.main.${META} VALUES ($key, $value)`, { key, value: JSON.stringify(value) });
    }
    await db.exec('DETACH out');
    renameSync(staging, into);
    return { file: into, bytes: statSync(into).size, tables, scopes: stored, findings: dataset.findings };
  } catch (error) {
    try {
      await db.exec('DETACH DATABASE IF EXISTS out');
    } catch {
      // already gone
    }
    removeStaging();
    throw error;
  } finally {
    db.close();
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
  const schema = `out.${ident(scope.schema)}`;
  await db.exec(`CREATE SCHEMA ${schema}`);
  for (const name of ATTRIBUTED_TABLES) {
    await db.exec(`CREATE TABLE ${schema}.${ident(name)} AS SELECT * FROM ${scope.table(name)}`);
  }
  await db.exec(`CREATE INDEX conv_order_id ON ${schema}.conv (order_id)`);
}

/**
 * Opens an imported file on db (an in-memory database): attached read-only, with
 * views t_<name> over its typed tables. attributed() tells a Scope where its
 * attribution lies, when it was computed for the reference currency asked.
 */
export async function openImported(
  file: string,
  db: Database,
): Promise<{ dataset: Dataset; attributed: (plugin: string | null, referenceCurrency: string) => Sql | undefined }> {
  try {
    await db.exec(`ATTACH ${sqlString(file)} AS ${ALIAS} (READ_ONLY)`);
  } catch (error) {
    throw new DataError(`cannot open ${file}: ${firstLine(error)}`);
  }
  const meta = await readMeta(db, file);
  await checkFilterColumns(db, file, meta);
  const loaded: [TableName, LoadedTable][] = [];
  for (const t of meta.tables) {
    await db.exec(`CREATE OR REPLACE VIEW ${ident(`t_${t.table}`)} AS SELECT * FROM ${ALIAS}.main.${ident(`t_${t.table}`)}`);
    loaded.push([
      t.table,
      {
        source: { table: t.table, patterns: [], display: t.display, files: [], format: 'parquet', jsonLines: false, hive: false, multiFile: false },
        columns: new Map(),
        hasPluginId: t.hasPluginId,
      },
    ]);
  }
  const dataset = Dataset.typed(file, db, loaded, meta.findings);
  const attributed = (plugin: string | null, referenceCurrency: string) => {
    const scope = meta.scopes.find((s) => s.plugin === plugin && s.referenceCurrency === referenceCurrency);
    return scope ? sql`${trusted(ALIAS)}.${sqlIdent(scope.schema)}` : undefined;
  };
  return { dataset, attributed };
}

/**
 * Every column the query parameters filter on (model/parameters.ts) must be in each scope's
 * attributed transactions: a file imported before a filter's column was added to conv is
 * refused with the command to import it again, not failed on later by a query.
 */
async function checkFilterColumns(db: Database, file: string, meta: ImportMeta): Promise<void> {
  const wanted = [...new Set(QUERY_PARAMETERS.flatMap((p) => field(p, 'column') ?? []))];
  const rows = await db.all<{ schema_name: string; column_name: string }>(
    `SELECT schema_name, column_name FROM duckdb_columns() WHERE database_name = $alias AND table_name = 'conv'`,
    { alias: ALIAS },
  );
  for (const scope of meta.scopes) {
    const present = new Set(rows.filter((r) => r.schema_name === scope.schema).map((r) => r.column_name));
    // A dataset without orders (validation only) has no attributed transactions to filter.
    if (present.size === 0) continue;
    const missing = wanted.filter((column) => !present.has(column));
    if (missing.length) {
      throw new DataError(
        `${file} was written by convx ${meta.convx} without ${missing.join(', ')}, which this convx filters on`,
        [`import the dataset again: convx data import ${meta.source} --into ${file} --force`],
      );
    }
  }
}

async function readMeta(db: Database, file: string): Promise<ImportMeta> {
  const notOurs = () =>
    new DataError(`${file} is a DuckDB database, but not a dataset written by \`convx data import\``, [
      `write one with: convx data import DIR --into dataset.duckdb`,
    ]);
  const present = await db.one<{ n: bigint }>(
    `SELECT count(*) AS n FROM duckdb_tables() WHERE database_name = $alias AND schema_name = 'main' AND table_name = $meta`,
    { alias: ALIAS, meta: META },
  );
  if (!present || Number(present.n) === 0) throw notOurs();
  const rows = await db.all<{ key: string; value: string }>(`SELECT key, value FROM ${ALIAS}.main.${META}`);
  const entries = Object.fromEntries(rows.map((r) => [r.key, JSON.parse(r.value) as unknown]));
  if (entries.format !== IMPORT_FORMAT) throw notOurs();
  if (entries.version !== IMPORT_VERSION) {
    throw new DataError(
      `${file} was written by convx ${String(entries.convx)} in dataset format ${String(entries.version)}; this convx reads format ${IMPORT_VERSION}`,
      [`import the dataset again: convx data import ${String(entries.source)} --into ${file} --force`],
    );
  }
  return entries as unknown as ImportMeta;
}
