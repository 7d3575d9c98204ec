/** Opening a local dataset: find, check and type its tables, then pick the plugin and its scope. */
import { DataError } from '../errors.js';
import { choosePlugin, Scope, type OpenOptions } from './attribution.js';
import { LocalBackend } from './backend.js';
import { Database } from './db.js';
import { Dataset } from './dataset.js';
import { isDuckDbFile, openImported } from './imported.js';

export interface LocalOpenOptions extends OpenOptions {
  /** Needed for reporting; validation only needs contacts. */
  require?: readonly ('orders' | 'touches' | 'contacts')[];
}

/** A dataset ready to query, and where its attribution already lies (an imported file). */
export interface OpenedDataset {
  dataset: Dataset;
  attributed?: OpenOptions['attributed'];
}

/** How a message names a dataset: "the dataset at DIR", or "in FILE" for an imported file. */
export const datasetAt = (dataset: Dataset, path: string) => `the dataset ${dataset.imported ? 'in' : 'at'} ${path}`;

/** Where a missing table would have come from: the files a directory may hold, or the import's source. */
export const whereTableWouldBe = (dataset: Dataset, table: string) =>
  dataset.imported
    ? ' (its source had none when it was imported)'
    : `: expected ${table}.csv, ${table}.csv.gz, ${table}.parquet, ${table}.json(l) or a folder ${table}/`;

/**
 * Opens a dataset, failing with a DataError that names every problem: a directory of
 * files (read, checked and typed; materialise copies even what could stay a view over
 * Parquet, for an import) or a file written by `convx data import` (attached as it is).
 */
export async function openDataset(
  path: string,
  require: LocalOpenOptions['require'] = ['orders', 'touches'],
  options: { materialise?: boolean } = {},
): Promise<Dataset> {
  return (await open(path, require, options)).dataset;
}

/** openDataset, with the attribution an imported file holds. */
export async function open(
  path: string,
  require: LocalOpenOptions['require'] = ['orders', 'touches'],
  options: { materialise?: boolean } = {},
): Promise<OpenedDataset> {
  const db = await Database.open();
  try {
    let opened: OpenedDataset;
    if (isDuckDbFile(path)) {
      opened = await openImported(path, db);
    } else {
      const dataset = await Dataset.open(path, db);
      opened = { dataset };
    }
    const { dataset } = opened;
    for (const table of require) {
      if (!dataset.has(table)) throw new DataError(`${datasetAt(dataset, path)} has no ${table} table${whereTableWouldBe(dataset, table)}`);
    }
    await dataset.validate();
    await dataset.createTypedTables(options);
    return opened;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Local mode of the CLI: one dataset, one plugin. */
export async function openLocalBackend(path: string, options: LocalOpenOptions = {}): Promise<LocalBackend> {
  const { dataset, attributed } = await open(path, options.require);
  try {
    const plugin = await choosePlugin(dataset, options.plugin);
    // The attribution waits for the first query, which bounds it by its period (only what the period needs is read);
    // an imported file holds it for every transaction already.
    const scope = await Scope.build(dataset, 'scope_0', plugin, { ...options, deferAttribution: true, ...(attributed ? { attributed } : {}) });
    return new LocalBackend(scope, scope.db);
  } catch (error) {
    dataset.db.close();
    throw error;
  }
}
