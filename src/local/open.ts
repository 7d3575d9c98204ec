/** Opening a local dataset: find, check and type its tables, then pick the plugin and its scope. */
import { createHash } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { DataError } from '../errors.js';
import { timed } from '../timings.js';
import { packageVersion } from '../version.js';
import { choosePlugin, Scope, type OpenOptions } from './attribution.js';
import { LocalBackend } from './backend.js';
import { COMMAND_DATABASE, Database, type DatabaseOptions } from './db.js';
import { Dataset, type Named } from './dataset.js';

export type { Named } from './dataset.js';
import { discoverTables } from './dataset/discover.js';
import { isDuckDbFile, openImported } from './imported.js';
import { pathWord } from '../words.js';

export interface LocalOpenOptions extends OpenOptions, DatabaseOptions, Named {
  /** Needed for reporting; validation only needs contacts. */
  require?: readonly ('orders' | 'touches' | 'contacts')[];
}


/** A dataset ready to query, and where its attribution already lies (an imported file). */
export interface OpenedDataset {
  dataset: Dataset;
  attributed?: OpenOptions['attributed'];
  /** What the files were when they were read (filesIdentity); dataVersion() turns it into the data's version. */
  identity: string;
}

/** One file as it was when read: its name, size, change time in nanoseconds and inode. */
function stamp(path: string, name: string): string[] {
  const s = statSync(path, { bigint: true });
  return [name, String(s.size), String(s.mtimeNs), String(s.ino)];
}

/**
 * What the files of a dataset are, taken before they are read (so that a file changed while it is
 * read changes it on the next load at the latest): each table file's path relative to the
 * dataset, size, modification time and inode; for an imported .duckdb file, that file's. The
 * dataset's own path is not part of it: the same files give the same identity wherever they are
 * named from.
 */
export function filesIdentity(path: string, name = path): string {
  const files = isDuckDbFile(path)
    ? [stamp(path, 'imported.duckdb')]
    : [...discoverTables(path, name).values()]
        .flatMap((source) => source.files)
        .map((file) => stamp(file, relative(path, file).split(sep).join('/')))
        .sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));
  return JSON.stringify(files);
}

/**
 * The version of the data as answers see it: a hash of the files (filesIdentity), the load option
 * that changes the answers (the reference currency asked) and convx's own version. Local mode and
 * `convx serve` compute it the same way, so the same files give the same version in both; a reload
 * of unchanged files keeps it (and the ETags with it); a changed file changes it.
 */
export function dataVersion(identity: string, options: { referenceCurrency?: string | undefined } = {}): string {
  const reference = options.referenceCurrency?.trim().toUpperCase() || null;
  return createHash('sha256')
    .update(JSON.stringify(['convx-data-version', 1, packageVersion(), identity, reference]))
    .digest('base64url')
    .slice(0, 22);
}

/** How a message names a dataset: "the dataset at DIR", or "in FILE" for an imported file (by its name: Named). */
export const datasetAt = (dataset: Dataset) => `the dataset ${dataset.imported ? 'in' : 'at'} ${dataset.name}`;

/** The tables a plugin must have only its own rows of: orders, clicks and contacts (names, e-mail addresses). */
const TENANT_TABLES = ['orders', 'touches', 'contacts'] as const;

/**
 * A dataset of several plugins is served, or split into a file per plugin, only where each of
 * TENANT_TABLES it has names the plugin of every row: a table without plugin_id is every plugin's
 * (docs/datasets.md), so each plugin would read all of its rows, other plugins' contacts too
 * (`readsAll`: how, "every plugin's token would read all of"). `--shared-tables` allows it.
 */
export function requireTenantTables(dataset: Dataset, plugins: number, readsAll: string): void {
  if (plugins < 2) return;
  const unscoped = TENANT_TABLES.filter((name) => dataset.has(name) && !dataset.tables.get(name)!.hasPluginId);
  if (!unscoped.length) return;
  const one = unscoped.length === 1;
  throw new DataError(`${datasetAt(dataset)} holds ${plugins} plugins, and its ${unscoped.join(', ')} ${one ? 'has' : 'have'} no plugin_id: ${readsAll} ${one ? 'its' : 'their'} rows`, [
    'give each row its plugin in a plugin_id column, or pass --shared-tables where every plugin may read them',
  ]);
}

/** Where a missing table would have come from: the files a directory may hold, or the import's source. */
export const whereTableWouldBe = (dataset: Dataset, table: string) =>
  dataset.imported
    ? ' (its source had none when it was imported)'
    : `: expected ${table}.csv, ${table}.csv.gz, ${table}.parquet, ${table}.json(l) or a folder ${table}/`;

/**
 * A line that names the plugin files a directory holds (data import --split-plugins): a command reads
 * one of them (`use`: how, given the first one's path as a shell word).
 */
export function pluginFiles(path: string, name: string, use = (file: string) => `pass one to --data, e.g. --data ${file}`): string[] {
  let names: string[] = [];
  try {
    if (statSync(path).isDirectory()) names = readdirSync(path).filter((name) => name.endsWith('.duckdb')).sort();
  } catch {
    // not a directory to list
  }
  if (names.length === 0) return [];
  return [`it holds .duckdb files (data import --split-plugins writes one per plugin): ${use(pathWord(join(name, names[0]!)))}`];
}

/**
 * Opens a dataset, failing with a DataError that names every problem: a directory of
 * files (read, checked and typed; materialise copies even what could stay a view over
 * Parquet, for an import) or a file written by `convx data import` (attached as it is).
 */
export async function openDataset(
  path: string,
  require: LocalOpenOptions['require'] = ['orders', 'touches'],
  options: { materialise?: boolean } & DatabaseOptions & Named = {},
): Promise<Dataset> {
  return (await open(path, require, options)).dataset;
}

/** openDataset, with the attribution an imported file holds. */
export async function open(
  path: string,
  require: LocalOpenOptions['require'] = ['orders', 'touches'],
  options: { materialise?: boolean; command?: boolean } & DatabaseOptions & Named = {},
): Promise<OpenedDataset> {
  // A command's steps each free what the next needs: the allocator returns freed memory to the system in the
  // background, so that the peak is about one step's, not that step's plus what earlier steps left behind.
  const db = await timed('start DuckDB', () => Database.open(':memory:', {
    ...(options.threads ? { threads: options.threads } : {}),
    ...(options.memoryLimitBytes ? { memoryLimitBytes: options.memoryLimitBytes } : {}),
    // A command's instance is kept for the process's next command (instances.ts): a test suite runs thousands.
    ...(options.command ? COMMAND_DATABASE : {}),
    ...(options.reuse ? { reuse: true } : {}),
  }));
  const name = options.name ?? path;
  try {
    let opened: OpenedDataset;
    if (isDuckDbFile(path)) {
      const identity = filesIdentity(path, name);
      opened = { ...(await timed('open the imported file', () => openImported(path, db, name))), identity };
    } else {
      const identity = filesIdentity(path, name);
      const dataset = await timed('read the files', () => Dataset.open(path, db, { name }));
      opened = { dataset, identity };
    }
    const { dataset } = opened;
    for (const table of require) {
      if (!dataset.has(table)) throw new DataError(`${datasetAt(dataset)} has no ${table} table${whereTableWouldBe(dataset, table)}`, pluginFiles(path, name));
    }
    await timed('check the values', () => dataset.validate());
    // A command attributes once: orders and contacts from one Parquet file each are read there rather than copied into memory.
    await timed('type the tables', () => dataset.createTypedTables({ ...options, ...(options.command ? { inPlace: ['orders', 'contacts'] as const } : {}) }));
    return opened;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Local mode of the CLI: one dataset, one plugin. */
export async function openLocalBackend(path: string, options: LocalOpenOptions = {}): Promise<LocalBackend> {
  const { dataset, attributed, identity } = await open(path, options.require, { command: true, name: options.name, ...(options.threads ? { threads: options.threads } : {}) });
  try {
    const plugin = await choosePlugin(dataset, options.plugin);
    // The attribution waits for the first query, which bounds it by its period (only what the period needs is read);
    // an imported file holds it for every transaction already.
    const scope = await Scope.forQuery(dataset, 'scope_0', plugin, { ...options, ...(attributed ? { attributed } : {}) });
    return new LocalBackend(scope, scope.db, undefined, undefined, dataVersion(identity, options));
  } catch (error) {
    dataset.db.close();
    throw error;
  }
}
