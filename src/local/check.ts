/** `convx data check`: every problem of the files, plus integrity findings across tables. */
import { DataError } from '../errors.js';
import { Database, ident, inList, type SqlParams } from './db.js';
import { Dataset, formatFileProblem, type DataIssue, type FileProblem } from './dataset.js';
import { listPlugins } from './attribution.js';
import { isDuckDbFile, openImported } from './imported.js';
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
  ok: boolean;
}

/** The tables whose date range a check reports, and the column it is of. */
const DATED: Partial<Record<string, string>> = { orders: 'datetime', touches: 'datetime', fx: 'date' };


/** onPhase: says what the check is doing (a phase per call), for a progress line. */
export async function checkDataset(dir: string, onPhase: (phase: string) => void = () => undefined): Promise<CheckReport> {
  const db = await Database.open();
  try {
    onPhase('reading and checking the files');
    // An imported file was checked when imported: its problems are none, its findings stored.
    const dataset = isDuckDbFile(dir) ? (await openImported(dir, db)).dataset : await Dataset.open(dir, db, { collect: true });
    const problems = await dataset.problems();
    const findings: DataIssue[] = [];
    for (const table of ['orders', 'touches'] as const) {
      if (!dataset.has(table) && !dataset.unreadable.some((p) => p.table === table)) {
        findings.push({ code: 'missing_table', message: `no ${table} table: reports need one`, count: 1, examples: [] });
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
        const range = column
          ? `, strftime(min(${column}), $format) AS first, strftime(max(${column}), $format) AS last`
          : '';
        const row = await db.one<{ n: bigint; first?: string | null; last?: string | null }>(
          `SELECT count(*) AS n${range} FROM ${ident(`t_${name}`)}`,
          column ? { format: name === 'fx' ? '%Y-%m-%d' : '%Y-%m-%dT%H:%M:%S.%gZ' } : {},
        );
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
      ok: problems.length === 0 && findings.length === 0,
    };
  } catch (error) {
    if (error instanceof DataError) throw error;
    throw new DataError(`cannot check ${dir}: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    db.close();
  }
}

async function finding(
  db: Database,
  code: DataIssue['code'],
  sql: string,
  describe: (count: number) => string,
  params: SqlParams = {},
): Promise<DataIssue | undefined> {
  const rows = await db.all<{ example: string; total: bigint }>(
    `SELECT example, count(*) OVER () AS total FROM (${sql}) ORDER BY example LIMIT 5`,
    params,
  );
  if (rows.length === 0) return undefined;
  const count = Number(rows[0]!.total);
  return { code, message: describe(count), count, examples: rows.map((r) => r.example) };
}

async function integrityFindings(dataset: Dataset): Promise<DataIssue[]> {
  const db = dataset.db;
  const out: (DataIssue | undefined)[] = [];
  if (dataset.has('orders')) {
    out.push(
      await finding(
        db,
        'duplicate_order',
        `SELECT coalesce(plugin_id || '/', '') || order_id AS example FROM t_orders
         WHERE NOT coalesce(is_refund, false) GROUP BY plugin_id, order_id HAVING count(*) > 1`,
        (n) => `${plural(n, 'order id')} with more than one order row; the earliest row counts`,
      ),
      await finding(
        db,
        'refund_without_order',
        `SELECT DISTINCT coalesce(r.plugin_id || '/', '') || r.order_id AS example FROM t_orders r
         WHERE coalesce(r.is_refund, false) AND NOT EXISTS (
           SELECT 1 FROM t_orders o WHERE NOT coalesce(o.is_refund, false) AND o.order_id = r.order_id
             AND o.plugin_id IS NOT DISTINCT FROM r.plugin_id)`,
        (n) => `${plural(n, 'order id')} with refunds but no order row; those refunds are never reported`,
      ),
    );
  }
  if (dataset.has('touches') && dataset.has('sources')) {
    out.push(
      await finding(
        db,
        'unknown_source',
        `SELECT DISTINCT t.source_type || ':' || t.source_id AS example FROM t_touches t
         WHERE NOT EXISTS (SELECT 1 FROM t_sources s WHERE s.source_type = t.source_type AND s.source_id = t.source_id)`,
        (n) => `${plural(n, 'source')} in touches missing from sources; their names fall back to the source id`,
      ),
    );
  }
  if (dataset.has('orders')) {
    const references = await referenceCandidates(dataset);
    const currencies = await db.all<{ c: string }>(`SELECT DISTINCT currency AS c FROM t_orders`);
    if (references.length > 0 || currencies.length > 1) {
      const params: SqlParams = {};
      const notReference = references.length ? `AND o.currency NOT IN ${inList(params, 'ref', references)}` : '';
      const hasFx = dataset.has('fx');
      out.push(
        await finding(
          db,
          'currency_without_fx',
          `SELECT DISTINCT o.currency AS example FROM t_orders o WHERE true ${notReference}
           ${hasFx ? 'AND NOT EXISTS (SELECT 1 FROM t_fx f WHERE f.currency = o.currency)' : ''}`,
          (n) => `${plural(n, 'order currency', 'order currencies')} with no rate in fx at all`,
          params,
        ),
      );
      if (hasFx) {
        out.push(
          await finding(
            db,
            'fx_gap',
            `SELECT o.currency || ' on ' || CAST(o.day AS VARCHAR) AS example FROM (
               SELECT DISTINCT currency, CAST(datetime AS DATE) AS day FROM t_orders o WHERE true ${notReference}
                 AND EXISTS (SELECT 1 FROM t_fx f WHERE f.currency = o.currency)) o
             ASOF LEFT JOIN (SELECT DISTINCT currency, date FROM t_fx) f ON o.currency = f.currency AND o.day >= f.date
             WHERE f.date IS NULL OR f.date < o.day - INTERVAL 7 DAY`,
            (n) => `${plural(n, 'day')} with orders but no rate on that day or the 7 before; reports over them fail`,
            params,
          ),
        );
      }
    }
  }
  return out.filter((f): f is DataIssue => f !== undefined);
}

async function referenceCandidates(dataset: Dataset): Promise<string[]> {
  const parts: string[] = [];
  if (dataset.has('plugins')) parts.push(`SELECT reference_currency AS c FROM t_plugins`);
  if (dataset.has('fx')) parts.push(`SELECT reference_currency AS c FROM t_fx`);
  if (parts.length === 0) return [];
  const rows = await dataset.db.all<{ c: string }>(
    `SELECT DISTINCT c FROM (${parts.join(' UNION ALL ')}) WHERE c IS NOT NULL ORDER BY c`,
  );
  return rows.map((r) => r.c);
}
