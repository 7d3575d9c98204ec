/** Opening a local dataset: find, check and type its tables, then pick the plugin and its scope. */
import { DataError } from '../errors.js';
import { choosePlugin, Scope, type OpenOptions } from './attribution.js';
import { LocalBackend } from './backend.js';
import { Database } from './db.js';
import { Dataset } from './dataset.js';

export interface LocalOpenOptions extends OpenOptions {
  /** Needed for reporting; validation only needs contacts. */
  require?: readonly ('orders' | 'touches' | 'contacts')[];
}

/** Opens, checks and types a dataset, failing with a DataError that names every problem. */
export async function openDataset(dir: string, require: LocalOpenOptions['require'] = ['orders', 'touches']): Promise<Dataset> {
  const db = await Database.open();
  try {
    const dataset = await Dataset.open(dir, db);
    for (const table of require) {
      if (!dataset.has(table)) {
        throw new DataError(
          `the dataset at ${dir} has no ${table} table: expected ${table}.csv, ${table}.csv.gz, ${table}.parquet, ${table}.json(l) or a folder ${table}/`,
        );
      }
    }
    await dataset.validate();
    await dataset.createTypedTables();
    return dataset;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Local mode of the CLI: one dataset, one plugin. */
export async function openLocalBackend(dir: string, options: LocalOpenOptions = {}): Promise<LocalBackend> {
  const dataset = await openDataset(dir, options.require);
  try {
    const plugin = await choosePlugin(dataset, options.plugin);
    // The attribution waits for the first query, which bounds it by its period (only what the period needs is read).
    const scope = await Scope.build(dataset, 'scope_0', plugin, { ...options, deferAttribution: true });
    return new LocalBackend(scope, scope.db);
  } catch (error) {
    dataset.db.close();
    throw error;
  }
}

