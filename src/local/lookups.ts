/**
 * Shell completion's look-ups in local mode (`Backend.lookup`): the plugins, currencies,
 * countries, source and smartflow ids a dataset holds. `openLookups` reads a dataset directory's
 * files or an imported .duckdb file as they are, only the columns asked, every plugin's (no
 * checks, typing or scope: a TAB must be quick, and works on a dataset that holds several
 * plugins before one is chosen); `LocalBackend.lookup` asks the same of its scope's tables.
 */
import { lookupTexts, MAX_LOOKUP_VALUES, type LookupKind, type LookupOptions, type Lookups } from '../backend.js';
import { Database, type DatabaseOptions } from './db.js';
import { discoverTables } from './dataset/discover.js';
import { readExpression } from './dataset/reader.js';
import { isDuckDbFile } from './imported.js';
import type { TableName } from './schema.js';
import { ident, int, literal, sql, table, type Sql } from './sql.js';

/** Where a table's rows are read from; undefined when the data has no such table. */
export type LookupTables = (name: TableName) => Sql | undefined;

/** [table, column] pairs that hold a kind's values, in tiers: the first tier that yields any that count wins (sources before the touches). */
const COLUMNS: Record<LookupKind, [TableName, string][][]> = {
  plugins: [[['plugins', 'plugin_id'], ['orders', 'plugin_id'], ['touches', 'plugin_id'], ['contacts', 'plugin_id']]],
  currencies: [[['orders', 'currency'], ['fx', 'currency'], ['fx', 'reference_currency'], ['plugins', 'reference_currency']]],
  countries: [[['orders', 'country'], ['contacts', 'country']]],
  sources: [[['sources', 'source_id']], [['touches', 'source_id']]],
  smartflows: [[['sources', 'smartflow_id']]],
};

/** The kind's values in the tables, reading only the columns it needs; the signal interrupts the query running. */
export async function lookupValues(db: Database, tables: LookupTables, kind: LookupKind, options: LookupOptions = {}): Promise<string[]> {
  const { signal } = options;
  const stop = () => db.interrupt();
  signal?.addEventListener('abort', stop);
  try {
    for (const tier of COLUMNS[kind]) {
      const values: unknown[] = [];
      for (const [name, column] of tier) {
        const from = tables(name);
        if (!from || signal?.aborted) continue;
        try {
          const rows = await db.all<{ v: unknown }>(
            sql`SELECT DISTINCT CAST(${ident(column)} AS VARCHAR) AS v FROM ${from} WHERE ${ident(column)} IS NOT NULL LIMIT ${int(MAX_LOOKUP_VALUES)}`,
          );
          values.push(...rows.map((r) => r.v));
        } catch {
          // no such column: another table may have it
        }
      }
      const texts = lookupTexts(values, options.accept);
      if (texts.length) return texts;
    }
    return [];
  } finally {
    signal?.removeEventListener('abort', stop);
  }
}

/** A dataset directory or an imported .duckdb file, opened for look-ups only. */
export async function openLookups(path: string, options: DatabaseOptions = {}): Promise<Lookups> {
  const imported = isDuckDbFile(path);
  const found = imported ? undefined : discoverTables(path);
  const tables: LookupTables = found
    ? (name) => {
        const source = found.get(name);
        return source ? readExpression(source) : undefined;
      }
    : (name) => table(name, 'imported.main');
  const db = await Database.open(':memory:', { ...options, reuse: true });
  try {
    if (imported) await db.exec(sql`ATTACH ${literal(path)} AS imported (READ_ONLY)`);
  } catch (error) {
    db.close();
    throw error;
  }
  return {
    lookup: (kind, options) => lookupValues(db, tables, kind, options),
    close: async () => db.close(),
  };
}
