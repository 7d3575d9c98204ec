/** `convx data check`: every problem of the files, plus integrity findings across tables. */
import { DataError } from '../errors.js';
import { COMMAND_DATABASE, Database, type DatabaseOptions } from './db.js';
import { EMPTY, ident, join, list, sql, table, trusted, type Sql } from './sql.js';
import { Dataset, formatFileProblem, type DataIssue, type FileProblem, type Named } from './dataset.js';
import { listPlugins } from './attribution.js';
import { isDuckDbFile, openImported } from './imported.js';
import { pluginFiles } from './open.js';
import { plural } from '../words.js';

export interface CheckReport {
  dataset: string;
  /**
   * Each table with its rows; orders and touches with the first and last datetime
   * (YYYY-MM-DDTHH:MM:SS.sssZ, as the interface's timestamps), fx with the first and last date (null when empty).
   */
  tables: { table: string; file: string; rows: number; from?: string | null; to?: string | null }[];
  plugins: string[];
  problems: (FileProblem & { text: string })[];
  findings: DataIssue[];
  /**
   * Whether the checks across tables ran (duplicate ids, refunds without an order, rates, ...):
   * they read the typed tables, which need files without problems, so a report with problems has
   * only the findings of missing tables, not "no finding".
   */
  integrityChecked: boolean;
  ok: boolean;
}

/** The tables whose date range a check reports, and the column it is of. */
const DATED: Partial<Record<string, string>> = { orders: 'datetime', touches: 'datetime', fx: 'date' };


/** onPhase: says what the check is doing (a phase per call), for a progress line. */
export async function checkDataset(dir: string, onPhase: (phase: string) => void = () => undefined, options: DatabaseOptions & Named = {}): Promise<CheckReport> {
  const { name = dir, ...databaseOptions } = options;
  const db = await Database.open(':memory:', { ...databaseOptions, ...COMMAND_DATABASE });
  try {
    onPhase('reading and checking the files');
    // An imported file was checked when imported: its problems are none, its findings stored.
    const dataset = isDuckDbFile(dir) ? (await openImported(dir, db, name)).dataset : await Dataset.open(dir, db, { collect: true, name });
    // a folder of plugin files (--split-plugins) is no dataset: which file to check instead
    if (dataset.tables.size === 0 && dataset.unreadable.length === 0) {
      const files = pluginFiles(dir, name, (file) => `check one of them, e.g. convx data check ${file}`);
      if (files.length) throw new DataError(`${name} holds no dataset tables`, files);
    }
    const problems = await dataset.problems();
    const findings: DataIssue[] = [];
    for (const needed of ['orders', 'touches'] as const) {
      if (!dataset.has(needed) && !dataset.unreadable.some((p) => p.table === needed)) {
        findings.push({ code: 'missing_table', message: `no ${needed} table: reports need one`, count: 1, examples: [] });
      }
    }
    const tables: CheckReport['tables'] = [];
    let plugins: string[] = [];
    // Integrity needs typed tables, which need clean files.
    if (problems.length === 0) {
      onPhase('typing the tables');
      await dataset.createTypedTables();
      for (const [name, loaded] of dataset.tables) {
        const column = DATED[name];
        const format = name === 'fx' ? '%Y-%m-%d' : '%Y-%m-%dT%H:%M:%S.%gZ';
        const range = column ? sql`, strftime(min(${ident(column)}), ${format}) AS first, strftime(max(${ident(column)}), ${format}) AS last` : EMPTY;
        const row = await db.one<{ n: bigint; first?: string | null; last?: string | null }>(sql`SELECT count(*) AS n${range} FROM ${table(name)}`);
        tables.push({
          table: name,
          file: loaded.source.display,
          rows: Number(row?.n ?? 0),
          ...(column ? { from: row?.first ?? null, to: row?.last ?? null } : {}),
        });
      }
      plugins = await listPlugins(dataset);
      onPhase('checking integrity across tables');
      findings.push(...(await integrityFindings(dataset)));
      // Found while typing the tables, with the line of each (negative orders).
      findings.push(...dataset.findings);
    }
    return {
      dataset: dir,
      tables,
      plugins,
      problems: problems.map((p) => ({ ...p, text: formatFileProblem(p) })),
      findings,
      integrityChecked: problems.length === 0,
      ok: problems.length === 0 && findings.length === 0,
    };
  } catch (error) {
    if (error instanceof DataError) throw error;
    throw new DataError(`cannot check ${name}: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    db.close();
  }
}

async function finding(
  db: Database,
  code: DataIssue['code'],
  examples: Sql,
  describe: (count: number) => string,
): Promise<DataIssue | undefined> {
  const rows = await db.all<{ example: string; total: bigint }>(sql`SELECT example, count(*) OVER () AS total FROM (${examples}) ORDER BY example LIMIT 5`);
  if (rows.length === 0) return undefined;
  const count = Number(rows[0]!.total);
  return { code, message: describe(count), count, examples: rows.map((r) => r.example) };
}

const ORDERS = table('orders');
const FX = table('fx');
/** What makes one rate: a currency on a day, to a reference currency, of a plugin. */
const FX_KEY = sql`currency, date, reference_currency, plugin_id`;

async function integrityFindings(dataset: Dataset): Promise<DataIssue[]> {
  const db = dataset.db;
  const out: (DataIssue | undefined)[] = [];
  if (dataset.has('orders')) out.push(...(await orderFindings(db)));
  if (dataset.has('touches') && dataset.has('sources')) {
    out.push(
      await finding(
        db,
        'unknown_source',
        sql`SELECT DISTINCT t.source_type || ':' || t.source_id AS example FROM ${table('touches')} t
         WHERE NOT EXISTS (SELECT 1 FROM ${table('sources')} s WHERE s.source_type = t.source_type AND s.source_id = t.source_id)`,
        (n) => `${plural(n, 'source')} in touches missing from sources; their names fall back to the source id`,
      ),
    );
  }
  if (dataset.has('orders')) out.push(...(await currencyFindings(dataset)));
  if (dataset.has('contacts')) {
    // A validation takes a contact's first row in file order: a later row's unsubscribed or consent is not read.
    out.push(
      await finding(
        db,
        'duplicate_contact',
        sql`SELECT coalesce(plugin_id || '/', '') || contact_id AS example FROM ${table('contacts')} GROUP BY plugin_id, contact_id HAVING count(*) > 1`,
        (n) => `${plural(n, 'contact id')} with more than one row; the first row in file order counts (its e-mail, consent and unsubscribed), the others are not read`,
      ),
    );
  }
  return out.filter((f): f is DataIssue => f !== undefined);
}

/** Order ids with more than one order row, refunds with none, and refunds dated before their order. */
async function orderFindings(db: Database): Promise<(DataIssue | undefined)[]> {
  return [
    await finding(
      db,
      'duplicate_order',
      sql`SELECT coalesce(plugin_id || '/', '') || order_id AS example FROM ${ORDERS}
       WHERE NOT coalesce(is_refund, false) GROUP BY plugin_id, order_id HAVING count(*) > 1`,
      (n) => `${plural(n, 'order id')} with more than one order row; the earliest row counts`,
    ),
    await finding(
      db,
      'refund_without_order',
      sql`SELECT DISTINCT coalesce(r.plugin_id || '/', '') || r.order_id AS example FROM ${ORDERS} r
       WHERE coalesce(r.is_refund, false) AND NOT EXISTS (
         SELECT 1 FROM ${ORDERS} o WHERE NOT coalesce(o.is_refund, false) AND o.order_id = r.order_id
           AND o.plugin_id IS NOT DISTINCT FROM r.plugin_id)`,
      (n) => `${plural(n, 'order id')} with refunds but no order row; those refunds are never reported`,
    ),
    // Likely an export error: a refund counts on its own day, so one dated before its sale is reported before it.
    await finding(
      db,
      'refund_before_order',
      sql`SELECT DISTINCT coalesce(r.plugin_id || '/', '') || r.order_id AS example FROM ${ORDERS} r
       JOIN (SELECT plugin_id, order_id, min(datetime) AS sold FROM ${ORDERS} WHERE NOT coalesce(is_refund, false) GROUP BY plugin_id, order_id) o
         ON o.order_id = r.order_id AND o.plugin_id IS NOT DISTINCT FROM r.plugin_id
       WHERE coalesce(r.is_refund, false) AND r.datetime < o.sold`,
      (n) => `${plural(n, 'order id')} with a refund dated before the order; a refund counts on its own day, so it is reported before the sale it takes back`,
    ),
  ];
}

/** Order currencies (other than a reference currency) with no rate at all, and days with none near them. */
async function currencyFindings(dataset: Dataset): Promise<(DataIssue | undefined)[]> {
  const db = dataset.db;
  const references = await referenceCandidates(dataset);
  const currencies = await db.all<{ c: string }>(sql`SELECT DISTINCT currency AS c FROM ${ORDERS}`);
  if (references.length === 0 && currencies.length <= 1) return [];
  const notReference = references.length ? sql`AND o.currency NOT IN ${list(references)}` : EMPTY;
  const hasFx = dataset.has('fx');
  const out = [
    await finding(
      db,
      'currency_without_fx',
      sql`SELECT DISTINCT o.currency AS example FROM ${ORDERS} o WHERE true ${notReference}
         ${hasFx ? sql`AND NOT EXISTS (SELECT 1 FROM ${FX} f WHERE f.currency = o.currency)` : EMPTY}`,
      (n) => `${plural(n, 'order currency', 'order currencies')} with no rate in fx at all`,
    ),
  ];
  if (hasFx) {
    out.push(
      await finding(
        db,
        'fx_gap',
        sql`SELECT o.currency || ' on ' || CAST(o.day AS VARCHAR) AS example FROM (
             SELECT DISTINCT currency, CAST(datetime AS DATE) AS day FROM ${ORDERS} o WHERE true ${notReference}
               AND EXISTS (SELECT 1 FROM ${FX} f WHERE f.currency = o.currency)) o
           ASOF LEFT JOIN (SELECT DISTINCT currency, date FROM ${FX}) f ON o.currency = f.currency AND o.day >= f.date
           WHERE f.date IS NULL OR f.date < o.day - INTERVAL 7 DAY`,
        (n) => `${plural(n, 'day')} with orders but no rate on that day or the 7 before; reports over them fail`,
      ),
      await finding(
        db,
        'fx_duplicate',
        // A rate without reference_currency is one to the reference currency too (models/inputs.ts, referenceRates): it competes with each explicit one.
        sql`SELECT coalesce(k.plugin_id || '/', '') || k.currency || ' on ' || CAST(k.date AS VARCHAR) || coalesce(' to ' || k.reference_currency, '') AS example
           FROM (SELECT DISTINCT ${FX_KEY} FROM ${FX}) k JOIN ${FX} f
             ON f.plugin_id IS NOT DISTINCT FROM k.plugin_id AND f.currency = k.currency AND f.date = k.date
            AND (f.reference_currency IS NULL OR f.reference_currency = k.reference_currency)
           GROUP BY ALL HAVING count(DISTINCT f.rate) > 1`,
        (n) => `${plural(n, 'currency day')} with different rates in fx; the first row in file order counts`,
      ),
    );
  }
  return out;
}

async function referenceCandidates(dataset: Dataset): Promise<string[]> {
  const parts: Sql[] = [];
  if (dataset.has('plugins')) parts.push(sql`SELECT reference_currency AS c FROM ${table('plugins')}`);
  if (dataset.has('fx')) parts.push(sql`SELECT reference_currency AS c FROM ${FX}`);
  if (parts.length === 0) return [];
  const rows = await dataset.db.all<{ c: string }>(
    sql`SELECT DISTINCT c FROM (${join(parts, trusted(' UNION ALL '))}) WHERE c IS NOT NULL ORDER BY c`,
  );
  return rows.map((r) => r.c);
}
