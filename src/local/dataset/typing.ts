/**
 * The typed tables t_<name>: every column of the table's spec cast to its type (values.ts),
 * plugin_id, a row id in file order; and what typing finds that is not an error (negative orders).
 */
import { DataError } from '../../errors.js';
import type { Database } from '../db.js';
import { TABLES, type TableSpec } from '../schema.js';
import { timed } from '../../timings.js';
import { ident, int, join, sql, table, trusted, type Sql } from '../sql.js';
import { lineLabels, locationKey } from './labels.js';
import { fileLabel, firstLine } from './problems.js';
import { positioned, rawTable } from './reader.js';
import type { DataIssue, LoadedTable, SourceColumn } from './types.js';
import { negativeCondition, refundCondition, TIME_TYPE, typedValue, TYPED_TIMESTAMP } from './values.js';

/** The columns of a typed table: row_id (unless none is kept), plugin_id, the spec's columns, and the others a table keeps. */
function typedColumns(spec: TableSpec, loaded: LoadedTable, rowId: Sql | undefined, wholeMilliseconds: ReadonlySet<string>): Sql[] {
  const pluginId = loaded.columns.get('plugin_id');
  const select = [
    ...(rowId ? [sql`${rowId} AS row_id`] : []),
    pluginId ? sql`CAST(${ident(pluginId.name)} AS VARCHAR) AS plugin_id` : sql`CAST(NULL AS VARCHAR) AS plugin_id`,
    ...spec.columns.map((c) => {
      const found = loaded.columns.get(c.name);
      return sql`${typedValue(c, found, { wholeMilliseconds: found !== undefined && wholeMilliseconds.has(found.name) })} AS ${ident(c.name)}`;
    }),
  ];
  if (spec.keepOtherColumns) {
    const known = new Set(spec.columns.map((c) => c.name));
    for (const [lower, column] of loaded.columns) {
      if (!known.has(lower) && lower !== 'plugin_id') select.push(sql`CAST(${ident(column.name)} AS VARCHAR) AS ${ident(lower)}`);
    }
  }
  return select;
}

/** How a typed table is made: its rows' source, and its row id in file order (none where no order is kept). */
function typedShape(loaded: LoadedTable, materialise: boolean, inPlace: boolean): { asView: boolean; from: Sql; rowId: Sql | undefined } {
  const spec = TABLES[loaded.source.table];
  const parquet = loaded.source.format === 'parquet' && !materialise;
  // One Parquet file numbers its rows itself (file_row_number, the file's order): such a table may stay a view too.
  if (inPlace && parquet && !spec.unordered && loaded.source.files.length === 1) {
    // Contacts are numbered as a copy would number them (row_number over the scan, in file order): file_row_number
    // on the build side of a join trips an internal error of DuckDB 1.5 (BIGINT against UBIGINT).
    if (spec.name === 'contacts') return { asView: true, from: rawTable(spec.name), rowId: sql`row_number() OVER ()` };
    return { asView: true, from: positioned(loaded), rowId: sql`__pos + 1` };
  }
  const asView = spec.unordered === true && parquet;
  const rowId = asView || (spec.unordered && materialise) ? undefined : sql`row_number() OVER ()`;
  return { asView, from: rawTable(spec.name), rowId };
}

/**
 * Creates t_<name> of a loaded table and drops its raw copy; the finding of negative orders, if any.
 * A table whose row order never matters, read from Parquet, stays a typed view over the files: no
 * copy in memory, and Parquet is cheap to scan again; so does a table read in place (`inPlace`, a
 * command's one query) from a single Parquet file, numbered by its rows' places in the file. An
 * import (materialise) copies everything, so that the file stands on its own.
 */
export async function createTypedTable(db: Database, dir: string, loaded: LoadedTable, materialise: boolean, inPlace = false): Promise<DataIssue | undefined> {
  const spec = TABLES[loaded.source.table];
  const { asView, from, rowId } = typedShape(loaded, materialise, inPlace);
  try {
    // A view truncates its times on every read, where Parquet's statistics could no longer skip a period's row
    // groups: its typed timestamps are read as they are where none holds digits past the millisecond.
    const wholeMilliseconds = new Set<string>();
    if (asView) {
      const times = spec.columns.flatMap((c) => (c.type === 'timestamp' && loaded.columns.has(c.name) ? [loaded.columns.get(c.name)!] : []));
      const finer = await timed('look for times past the millisecond', () => subMillisecondTimes(db, from, times));
      for (const c of times) if (TIME_TYPE.test(c.rawType) && !finer.has(c.name)) wholeMilliseconds.add(c.name);
    }
    await db.exec(sql`CREATE OR REPLACE ${trusted(asView ? 'VIEW' : 'TABLE')} ${table(spec.name)} AS SELECT ${join(typedColumns(spec, loaded, rowId, wholeMilliseconds))} FROM ${from}`);
    const finding = spec.name === 'orders' ? await timed('check negative amounts', () => negativeOrders(db, dir, loaded)) : undefined;
    if (!asView) await db.exec(sql`DROP ${trusted(loaded.source.format === 'parquet' ? 'VIEW' : 'TABLE')} ${rawTable(spec.name)}`);
    return finding;
  } catch (error) {
    throw new DataError(`cannot load ${loaded.source.display}: ${firstLine(error)}`);
  }
}

/**
 * docs/reporting.md, Transactions: a non-refund order with a negative amount is a finding; it
 * still counts as it stands. Counted on the typed table (a few milliseconds
 * for millions of rows); only when there are some, the raw rows say where.
 */
async function negativeOrders(db: Database, dir: string, loaded: LoadedTable): Promise<DataIssue | undefined> {
  const found = await db.one<{ n: bigint }>(
    sql`SELECT count(*) AS n FROM ${table('orders')} WHERE NOT coalesce(is_refund, false) AND (amount_wo_tax < 0 OR amount_w_tax < 0)`,
  );
  const count = Number(found?.n ?? 0);
  if (count === 0) return undefined;
  const { columns, source } = loaded;
  const amounts = [negativeCondition(columns.get('amount_wo_tax')), negativeCondition(columns.get('amount_w_tax'))].filter((c) => c !== undefined);
  const id = columns.get('order_id');
  const plugin = columns.get('plugin_id');
  const rows = await db.all(
    sql`SELECT __file, __pos, ${id ? sql`CAST(${ident(id.name)} AS VARCHAR)` : sql`NULL`} AS id,
         ${plugin ? sql`CAST(${ident(plugin.name)} AS VARCHAR)` : sql`NULL`} AS plugin
       FROM ${positioned(loaded)}
       WHERE NOT ${refundCondition(columns.get('is_refund'))} AND (${amounts.length ? join(amounts, sql` OR `) : sql`false`})
       ORDER BY __file, __pos LIMIT ${int(NEGATIVE_EXAMPLES)}`,
  );
  const labels = await lineLabels(
    db,
    loaded,
    rows.map((r) => ({ file: String(r.__file), position: Number(r.__pos) })),
  );
  return negativeAmounts(
    count,
    rows.map((row) => {
      const file = String(row.__file);
      const line = labels.get(locationKey(file, Number(row.__pos)));
      const order = row.id === null ? 'no order_id' : `order ${row.plugin === null ? '' : `${String(row.plugin)}/`}${String(row.id)}`;
      return `${order} (${[fileLabel(dir, source, file), line].filter(Boolean).join(', ')})`;
    }),
  );
}

/** The finding of count order rows with a negative amount, the first few (at most 5) named in examples. */
export function negativeAmounts(count: number, examples: string[]): DataIssue {
  return {
    code: 'negative_amount',
    message:
      count === 1
        ? 'an order row (is_refund false) has a negative amount_wo_tax or amount_w_tax; it counts as it stands'
        : `${count} order rows (is_refund false) have a negative amount_wo_tax or amount_w_tax; they count as they stand`,
    count,
    examples: examples.slice(0, NEGATIVE_EXAMPLES),
  };
}

/** How many rows of negative amounts a finding names. */
const NEGATIVE_EXAMPLES = 5;

/**
 * The typed timestamp columns among these that hold a value with digits past the millisecond, by one
 * scan of them (a view over Parquet files reads the others as they are: see typedValue);
 * TIMESTAMP_MS, TIMESTAMP_S and DATE hold none by their type, and are not scanned.
 */
async function subMillisecondTimes(db: Database, from: Sql, columns: readonly SourceColumn[]): Promise<Set<string>> {
  const typed = columns.filter((c) => TYPED_TIMESTAMP.test(c.rawType));
  if (typed.length === 0) return new Set();
  const probes = typed.map((c, i) => sql`bool_or(epoch_us(CAST(${ident(c.name)} AS TIMESTAMP)) % 1000 <> 0) AS ${ident(`s${i}`)}`);
  const row = await db.one(sql`SELECT ${join(probes)} FROM ${from}`);
  return new Set(typed.filter((_, i) => row?.[`s${i}`] === true).map((c) => c.name));
}
