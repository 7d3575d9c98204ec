/**
 * Writing convx's own dataset file (`convx data import DIR --into FILE.duckdb`; imported.ts reads
 * it): the dataset read, checked and attributed as `convx report` would, then its typed tables,
 * each scope's attribution and what the file holds, written under a temporary name and renamed
 * into place when complete. With --split-plugins (importSplit), one such file per plugin.
 */
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { DataError, UsageError } from '../errors.js';
import { SAFE_PLUGIN_ID } from '../model/plugin-id.js';
import { packageVersion } from '../version.js';
import { ATTRIBUTED_TABLES, buildScopes, listPlugins, SINGLE_PLUGIN_ID, type Scope } from './attribution.js';
import type { Database } from './db.js';
import { firstLine, type DataIssue, type Dataset } from './dataset.js';
import { IMPORT_FORMAT, IMPORT_VERSION, META, type ImportedFile, type ImportedScope, type ImportedTable, type ImportMeta } from './imported.js';
import { appendRows, datasetFiles, dropStored, rawColumns, sameColumns, unchangedSinceListed, withContentHashes } from './import-files.js';
import { datasetAt, openDataset, requireTenantTables, type Named } from './open.js';
import { TABLE_NAMES, TABLES } from './schema.js';
import { pathWord, quoted } from '../words.js';
import { EMPTY, ident, join as joinSql, literal, sql, table, trusted } from './sql.js';
import { assertStaged, assertWritable, Staging, writtenFile, type StagedFile } from './staging.js';

export interface ImportSummary {
  file: string;
  bytes: number;
  tables: ImportedTable[];
  scopes: ImportedScope[];
  findings: DataIssue[];
}

export interface ImportOptions extends Named {
  /** How messages name --into: as the user gave it (into is its absolute path). */
  intoName?: string | undefined;
  referenceCurrency?: string;
  /** Replace an existing file. */
  force?: boolean;
  /** Says what the import is doing (a phase per call), for a progress line. */
  onPhase?: (phase: string) => void;
  /** DuckDB threads (CONVX_THREADS); by default one per core. */
  threads?: number;
  /** --split-plugins of a dataset whose orders, touches or contacts have no plugin_id: each file then holds all their rows (`--shared-tables`). */
  sharedTables?: boolean;
}

/**
 * Reads, checks and attributes the dataset at dir as `convx report` would, then
 * writes the file: first under a temporary name beside it, renamed into place
 * when complete, so a failed import leaves nothing half-written.
 */
export async function importDataset(dir: string, asked: string, options: ImportOptions = {}): Promise<ImportSummary> {
  // The name given is checked and named in messages; a symbolic link's file is the one written.
  const shown = options.intoName ?? asked;
  checkTarget(asked, shown, options.force ?? false);
  const into = writtenFile(asked, '--into', shown);
  if (into !== asked) assertWritable(dirname(into), asked, { into: shown, folder: dirname(into) });
  // Taken before the files are read, so that a file changed while it is read is not taken as read (--append compares them).
  return importFiles(dir, into, await withContentHashes(dir, await datasetFiles(dir, options.threads, options.name)), options);
}

/**
 * The import of the dataset at dir into into, whose files are as files says (import-files.ts):
 * read, checked, attributed and written under a staging name, renamed over into when complete.
 * Given what into held before (`--append`: its list of files and its fileIdentity then), into is copied and only what can change is written
 * (import-files.ts, appendRows), when every stored table was read with the same columns.
 */
export async function importFiles(
  dir: string,
  into: string,
  files: ImportedFile[],
  options: ImportOptions,
  previous?: { meta: ImportMeta; identity: string },
): Promise<ImportSummary> {
  const phase = options.onPhase ?? (() => undefined);
  const staging = new Staging();
  phase('reading and checking the files');
  const dataset = await openSource(dir, options);
  try {
    phase('attributing');
    const scopes = await buildScopes(dataset, options.referenceCurrency !== undefined ? { referenceCurrency: options.referenceCurrency } : {});
    phase('writing');
    const columns = rawColumns(dataset);
    const extra = { files, referenceCurrencyAsked: options.referenceCurrency ?? null, columns };
    const patched = previous && sameColumns(previous.meta, columns) ? previous.meta : undefined;
    // An update (--append) the long way starts from a copy of the file it replaces (the one its list was read of), whose stored rows stay.
    const staged = patched ? staging.copy(into, previous!.identity) : staging.add(into);
    const written = await writeFile(dataset, staged, dir, [...scopes.values()], null, extra, patched);
    staging.commit();
    return { file: into, bytes: statSync(into).size, ...written };
  } catch (error) {
    await staging.remove();
    throw error;
  } finally {
    dataset.db.close();
  }
}

/**
 * The storage an imported file is written in: DuckDB 1.5's. The library's default is still that of
 * DuckDB 0.10.2, for older readers; convx reads its files with its own DuckDB, and the newer
 * storage's checkpoint costs less: on the samples, the file's DETACH 37 -> 14 ms (a third of a
 * small import); a full import of the bench's 2M orders 16.8 -> 14.6 s, for a file about 10 %
 * larger. An update's copy of a file written before in the older storage is raised to it (DuckDB
 * reads both; it cannot lower a file's storage).
 */
const STORAGE = trusted("(STORAGE_VERSION 'v1.5.0')");

/**
 * Attaches the file being written (an import's staging file, or the copy an update writes) as
 * `out`, once it is ready (an update's copy complete); target: the file it becomes, for the message.
 */
export async function attachOut(db: Database, file: StagedFile): Promise<void> {
  try {
    await file.ready;
    assertStaged(file);
    await db.exec(sql`ATTACH ${literal(file.staging)} AS out ${STORAGE}`);
  } catch (error) {
    if (error instanceof DataError) throw error;
    throw new DataError(`cannot write ${file.target}: ${firstLine(error)}`);
  }
}

/**
 * One imported file at staging: the typed tables (narrowed to the plugin given: its rows of the
 * tables with plugin_id, every row of the others), the scopes' attribution and what it holds.
 * A split file stores its one scope as scope_0, as an import of that plugin's rows alone would.
 */
async function writeFile(
  dataset: Dataset,
  staged: StagedFile,
  source: string,
  scopes: Scope[],
  plugin: string | null,
  extra: Pick<ImportMeta, 'files' | 'referenceCurrencyAsked' | 'columns'> = {},
  previous?: ImportMeta,
): Promise<Pick<ImportSummary, 'tables' | 'scopes' | 'findings'>> {
  const db = dataset.db;
  await attachOut(db, staged);
  let tables: ImportedTable[];
  const stored: ImportedScope[] = [];
  try {
    tables = previous ? await appendRows(db, dataset, previous) : await writeTables(db, dataset, plugin);
    if (previous) await dropStored(db, previous);
    for (const scope of scopes) {
      const schema = plugin === null ? scope.schema : 'scope_0';
      stored.push({ plugin: scope.plugin, schema, referenceCurrency: scope.referenceCurrency });
      if (scope.reports) await writeAttribution(db, scope, schema);
    }
    await writeMeta(db, {
      format: IMPORT_FORMAT,
      version: IMPORT_VERSION,
      convx: packageVersion(),
      source,
      importedAt: new Date().toISOString(),
      tables,
      findings: dataset.findings,
      scopes: stored,
      ...extra,
      // Every read of the files is done: a file written meanwhile keeps no hash.
      ...(extra.files ? { files: unchangedSinceListed(source, extra.files) } : {}),
    });
  } catch (error) {
    try {
      await db.exec(sql`DETACH DATABASE IF EXISTS out`);
    } catch {
      // already gone
    }
    throw error;
  }
  await db.exec(sql`DETACH out`);
  return { tables, scopes: stored, findings: dataset.findings };
}


/**
 * The dataset an import reads, checked as a command reads it and copied whole (materialise);
 * one without any of convx's tables is refused (a slip such as `convx data import .` from
 * another folder would write a file that answers nothing). One of contacts and assets alone
 * is a dataset for delivery validation.
 */
async function openSource(dir: string, options: ImportOptions): Promise<Dataset> {
  const dataset = await openDataset(dir, [], { materialise: true, reuse: true, name: options.name, ...(options.threads ? { threads: options.threads } : {}) });
  if (dataset.tables.size > 0) return dataset;
  dataset.db.close();
  throw new DataError(`${datasetAt(dataset)} holds none of convx's tables (${TABLE_NAMES.join(', ')}): nothing to import`, [
    'give the folder of the exported files, such as orders.csv and touches.csv (or folders orders/ and touches/ of them)',
  ]);
}

/** Refuses, naming them, the plugin ids that cannot name a file, and those that differ only in case (one file on a case-blind disk). */
function assertFileNames(ids: readonly string[], dataset: Dataset): void {
  const unsafe = ids.filter((id) => !SAFE_PLUGIN_ID.test(id));
  if (unsafe.length) {
    throw new DataError(
      `the dataset at ${dataset.name} has plugin ids that cannot name a file: ${unsafe.map(quoted).join(', ')}`,
      ['--split-plugins names each file after its plugin: 1 to 128 letters, digits, dots, hyphens or underscores, beginning with a letter or a digit'],
    );
  }
  const seen = new Map<string, string>();
  for (const id of ids) {
    const other = seen.get(id.toLowerCase());
    if (other !== undefined) throw new DataError(`the dataset at ${dataset.name} has plugin ids "${other}" and "${id}", which differ only in case: one file on a case-insensitive disk`);
    seen.set(id.toLowerCase(), id);
  }
}

export interface SplitSummary {
  dir: string;
  files: ImportSummary[];
  findings: DataIssue[];
  /** Plugin files of the directory this import did not write (of plugins the dataset no longer has): a server of the directory answers for them too. */
  others: string[];
}

/** --into DIR of --split-plugins: a directory, made if missing (the folder it is in must exist); never a name of a .duckdb file. shown: into as messages name it. */
function checkSplitTarget(into: string, shown: string): void {
  if (existsSync(into)) {
    if (!statSync(into).isDirectory()) throw new UsageError(`--into ${shown} is a file; with --split-plugins give a directory, e.g. --into plugins/`);
    assertWritable(into, into, { into: shown, folder: shown });
    return;
  }
  if (/\.duckdb$/i.test(into)) throw new UsageError(`--into ${shown}: with --split-plugins --into names a directory (of <plugin>.duckdb files), not a .duckdb file`, [], 'give a directory such as --into plugins/');
  missingFolder(into, shown);
}

/** Refuses an --into whose folder is not there (naming the command that makes it) or cannot be written. */
function missingFolder(into: string, shown: string): void {
  const [folder, named] = [dirname(into), dirname(shown)];
  if (!existsSync(folder)) throw new UsageError(`--into ${shown}: the folder ${named} does not exist`, [], `create it first (mkdir -p ${pathWord(named)}), or choose another --into`);
  if (!statSync(folder).isDirectory()) throw new UsageError(`--into ${shown}: ${named} is not a folder`);
  assertWritable(folder, into, { into: shown, folder: named });
}

/**
 * `data import --split-plugins`: reads, checks and attributes the dataset once, then writes one
 * file per plugin, DIR/<plugin>.duckdb, each what an import of that plugin's rows alone writes
 * (a dataset without plugin_id: default.duckdb). Plugin ids are checked before anything is
 * written; every file is staged and renamed into place only once all are complete.
 */
export async function importSplit(dir: string, into: string, options: ImportOptions = {}): Promise<SplitSummary> {
  checkSplitTarget(into, options.intoName ?? into);
  const phase = options.onPhase ?? (() => undefined);
  const staging = new Staging();
  phase('reading and checking the files');
  const dataset = await openSource(dir, options);
  try {
    const plugins = await listPlugins(dataset);
    if (!options.sharedTables) requireTenantTables(dataset, plugins.length, "each plugin's file would hold all of");
    const ids = plugins.length ? plugins : [SINGLE_PLUGIN_ID];
    assertFileNames(ids, dataset);
    // named under --into as given
    const existing = ids.filter((id) => existsSync(join(into, `${id}.duckdb`)));
    const named = (list: string[]) => list.map((id) => join(options.intoName ?? into, `${id}.duckdb`)).join(', ');
    const notFiles = existing.filter((id) => !statSync(join(into, `${id}.duckdb`)).isFile());
    if (notFiles.length) throw new UsageError(`${named(notFiles)}: not a file, so no plugin's file can replace it`);
    if (existing.length && !options.force) throw new UsageError(`${named(existing)} exist${existing.length === 1 ? 's' : ''}; choose another --into or pass --force to replace`);
    phase('attributing');
    const scopes = await buildScopes(dataset, options.referenceCurrency !== undefined ? { referenceCurrency: options.referenceCurrency } : {});
    if (!existsSync(into)) mkdirSync(into);
    phase('writing');
    const files: ImportSummary[] = [];
    for (const [id, scope] of scopes) {
      const file = join(into, `${id}.duckdb`);
      files.push({ file, bytes: 0, ...(await writeFile(dataset, staging.add(file), dir, [scope], scope.plugin)) });
    }
    staging.commit();
    for (const file of files) file.bytes = statSync(file.file).size;
    const written = new Set(files.map((file) => basename(file.file)));
    // Those a server of the directory serves: plugin files as it finds them (server/plugin-files.ts).
    const others = readdirSync(into, { withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.duckdb') && SAFE_PLUGIN_ID.test(entry.name.slice(0, -'.duckdb'.length)) && !written.has(entry.name))
      .map((entry) => entry.name)
      .sort();
    return { dir: into, files, findings: dataset.findings, others };
  } catch (error) {
    await staging.remove();
    throw error;
  } finally {
    dataset.db.close();
  }
}

/**
 * Refuses a target before any work: a directory; a name that does not end in .duckdb (the name
 * says what the file is: `--data shop.duckdb` reads as convx's dataset file to whoever sees it,
 * and a slip such as `--into exports/orders.csv` or `--into shop` never becomes a DuckDB file);
 * an existing file without force; a folder that is not there.
 */
function checkTarget(into: string, shown: string, force: boolean): void {
  const exists = existsSync(into);
  if (exists && !statSync(into).isFile()) throw new UsageError(`--into ${shown} is a directory; give a file name such as ${pathWord(join(shown, 'dataset.duckdb'))}`);
  if (!/\.duckdb$/i.test(into)) {
    throw new UsageError(
      `--into ${shown}: the file name must end in .duckdb (convx writes a DuckDB database file, and its name says so to whoever passes it to --data)`,
      [],
      `give a name such as ${pathWord(`${shown.replace(/\.[^./\\]*$/, '')}.duckdb`)}`,
    );
  }
  if (exists && !force) throw new UsageError(`${shown} exists; choose another --into or pass --force to replace it`);
  missingFolder(into, shown);
}

/** The typed tables into the file (those with a row order in it), and what each holds. */
async function writeTables(db: Database, dataset: Dataset, plugin: string | null): Promise<ImportedTable[]> {
  const tables: ImportedTable[] = [];
  for (const name of TABLE_NAMES) {
    const loaded = dataset.tables.get(name);
    if (!loaded) continue;
    const order = TABLES[name].unordered ? EMPTY : sql`ORDER BY row_id`;
    // As a scope's views narrow it (attribution.ts); the plugin id was checked to be a safe file name.
    const where = plugin !== null && loaded.hasPluginId ? sql`WHERE plugin_id = ${literal(plugin)}` : EMPTY;
    const rows = await db.rowsWritten(sql`CREATE TABLE ${table(name, 'out.main')} AS SELECT * FROM ${table(name)} ${where} ${order}`);
    tables.push({ table: name, display: loaded.source.display, hasPluginId: loaded.hasPluginId, rows });
  }
  return tables;
}

/** What the file holds, one row per key with its JSON value (replacing the table an update's copy holds). */
export async function writeMeta(db: Database, meta: ImportMeta, replace = false): Promise<void> {
  // One statement for the table and every row, in the order of the keys (VALUES keeps it).
  const rows = Object.entries(meta).map(([key, value]) => sql`(${key}, ${JSON.stringify(value)})`);
  await db.exec(sql`CREATE ${replace ? sql`OR REPLACE ` : EMPTY}TABLE out.main.${ident(META)} AS
    SELECT CAST(k AS VARCHAR) AS key, CAST(v AS VARCHAR) AS value FROM (VALUES ${joinSql(rows)}) AS t(k, v)`);
}

/**
 * A scope's attribution into the file, in the order the scope holds it (conv in time order, the
 * per-day sums by day), with an index on conv's order_id for look-ups of one order.
 */
async function writeAttribution(db: Database, scope: Scope, name: string): Promise<void> {
  const schema = sql`out.${ident(name)}`;
  await db.exec(sql`CREATE SCHEMA ${schema}`);
  for (const table of ATTRIBUTED_TABLES) {
    await db.exec(sql`CREATE TABLE ${schema}.${ident(table)} AS SELECT * FROM ${scope.relation(table)}`);
  }
  await db.exec(sql`CREATE INDEX conv_order_id ON ${schema}.conv (order_id)`);
}
