/**
 * A scope's stored attribution brought up to date with the new rows (`data import --append`),
 * as a full import would attribute every row: only the orders whose attributed transactions can
 * change are attributed again (models/attribution.ts, over their rows and their contacts' clicks),
 * their rows of conv replaced; source_info made anew from the sources still attributed; and the
 * per-day sums of the days that changed (sums.ts).
 *
 * An order's transactions can change when: it has a new row (a new order, a refund, a second row
 * of its id); a new click of its contact lies within the window before one of its rows; a new
 * exchange rate of its currency is the latest at or before one of its days (fx_date, the rate);
 * or its contact's first row of contacts is new.
 */
import { ATTR, CLICKS, CONV, ORDER_HEAD, SOURCE_INFO } from '../models/attribution.js';
import { materialise } from '../models/relation.js';
import type { TableName } from '../schema.js';
import { EMPTY, ident, int, join, literal, sql, trusted, type Sql } from '../sql.js';
import { WINDOW_DAYS } from '../../model/types.js';
import { newRows } from './new-rows.js';
import { day, modelInput, workTable, type Update } from './input.js';
import { updateSums } from './sums.js';

/** The columns of source_info a conv row copies (all but source_key). */
const IDENTITY = ['name', 'campaign_id', 'smartflow_id', 'smartflow_name', 'delivery_id', 'delivery_name', 'started_at'] as const;

/** The new rows of a table narrowed to the scope's plugin, or undefined when the table has none. */
function fresh(u: Update, name: TableName): Sql | undefined {
  const loaded = u.fresh.tables.get(name);
  if (!loaded) return undefined;
  const where = loaded.hasPluginId && u.scope.plugin !== null ? sql`WHERE plugin_id = ${literal(u.scope.plugin)}` : EMPTY;
  return sql`(SELECT * FROM ${newRows(name)} ${where})`;
}

/**
 * The orders whose transactions a new exchange rate can price otherwise: a rate is the latest of
 * its currency for the days from its date to the next rate's (exclusive), and only an attributed
 * transaction (conv) is priced.
 */
async function repriced(u: Update, newFx: Sql): Promise<Sql[]> {
  const rates = (from: Sql) => sql`(SELECT currency, date FROM ${from} WHERE reference_currency IS NULL OR reference_currency = ${u.scope.referenceCurrency})`;
  const spans = await u.scope.db.all<{ currency: string; since: string; next: string | null }>(sql`
    SELECT n.currency, strftime(n.date, '%Y-%m-%d') AS since,
           (SELECT strftime(min(f.date), '%Y-%m-%d') FROM ${rates(u.scope.relation('fx'))} f WHERE f.currency = n.currency AND f.date > n.date) AS next
    FROM (SELECT DISTINCT currency, date FROM ${rates(newFx)}) n ORDER BY 1, 2`);
  return spans.map(
    (r) => sql`SELECT order_id FROM ${u.scope.relation('conv')}
      WHERE currency = ${r.currency} AND day >= ${day(r.since)} ${r.next === null ? EMPTY : sql`AND day < ${day(r.next)}`}`,
  );
}

/** The order ids whose attributed transactions can change (see the module's comment), as the work table affected. */
async function affectedOrders(u: Update): Promise<void> {
  const orders = u.scope.relation('orders');
  const window = int(WINDOW_DAYS);
  const parts: Sql[] = [];
  const newOrders = fresh(u, 'orders');
  if (newOrders) parts.push(sql`SELECT order_id FROM ${newOrders}`);
  const newTouches = fresh(u, 'touches');
  if (newTouches) {
    parts.push(sql`SELECT o.order_id FROM ${orders} o JOIN (
        SELECT contact_id, min(datetime) AS lo, max(datetime) AS hi FROM ${newTouches} WHERE lower(trim(touch)) = 'click' GROUP BY contact_id) c
      ON o.contact_id = c.contact_id WHERE o.datetime >= c.lo AND o.datetime <= c.hi + INTERVAL ${window} DAY`);
  }
  const newFx = fresh(u, 'fx');
  if (newFx) parts.push(...(await repriced(u, newFx)));
  const newContacts = fresh(u, 'contacts');
  if (newContacts) {
    // Only an attributed transaction shows its contact's row.
    const stored = int(u.storedRows.get('contacts') ?? 0);
    parts.push(sql`SELECT order_id FROM ${u.scope.relation('conv')} WHERE contact_id IN (
        SELECT contact_id FROM ${newContacts} EXCEPT SELECT contact_id FROM ${u.scope.relation('contacts')} WHERE row_id <= ${stored})`);
  }
  const all = parts.length ? join(parts, trusted(' UNION ALL ')) : sql`SELECT CAST(NULL AS VARCHAR) AS order_id WHERE false`;
  await u.scope.db.exec(sql`CREATE TABLE ${workTable(u, 'affected')} AS SELECT DISTINCT order_id FROM (${all})`);
}

/** The rows the affected orders' attribution reads: their order rows, their contacts' touches around them, their contacts' rows. */
async function affectedInputs(u: Update): Promise<void> {
  const db = u.scope.db;
  const w = (name: string) => workTable(u, name);
  await db.exec(sql`CREATE TABLE ${w('orders')} AS SELECT * FROM ${u.scope.relation('orders')} WHERE order_id IN (SELECT order_id FROM ${w('affected')})`);
  // The window's bounds as constants, so that the scan of every touch skips what lies outside by its zonemaps.
  const span = await db.one<{ lo: string | null; hi: string | null }>(
    sql`SELECT strftime(min(datetime), '%Y-%m-%d %H:%M:%S.%f') AS lo, strftime(max(datetime), '%Y-%m-%d %H:%M:%S.%f') AS hi FROM ${w('orders')}`,
  );
  const at = (value: string | null | undefined) => (value ? sql`TIMESTAMP ${literal(value)}` : sql`CAST(NULL AS TIMESTAMP)`);
  await db.exec(sql`CREATE TABLE ${w('touches')} AS SELECT t.* FROM ${u.scope.relation('touches')} t
    SEMI JOIN (SELECT DISTINCT contact_id FROM ${w('orders')}) c ON t.contact_id = c.contact_id
    WHERE t.datetime >= ${at(span?.lo)} - INTERVAL ${int(WINDOW_DAYS)} DAY AND t.datetime <= ${at(span?.hi)}`);
  if (u.scope.dataset.has('contacts')) {
    await db.exec(sql`CREATE TABLE ${w('contacts')} AS SELECT * FROM ${u.scope.relation('contacts')} WHERE contact_id IN (SELECT DISTINCT contact_id FROM ${w('orders')})`);
  }
}

/** The affected orders' rows and touches as the attribution's inputs. */
const affectedInput = (u: Update, own: Record<string, Sql> = {}) =>
  modelInput(u, { orders: workTable(u, 'orders'), touches: workTable(u, 'touches'), contacts: workTable(u, 'contacts'), ...own });

/**
 * source_info as a full import makes it: the sources attributed after the update are the stored
 * ones (but those whose every conv row was an affected order's, unless the new attribution keeps
 * them) and the new attribution's. A source without sources.started_at falls back to its earliest
 * touch: the stored value, or a new touch before it; looked up in every touch only for a source
 * new to source_info.
 */
async function sourceInfo(u: Update): Promise<void> {
  const db = u.scope.db;
  const w = (name: string) => workTable(u, name);
  const conv = u.scope.relation('conv');
  const stored = u.scope.relation('source_info');
  // lost: the sources of the affected orders' stored rows that their new attribution does not name.
  await db.exec(sql`CREATE TABLE ${w('used')} AS
    WITH lost AS (SELECT DISTINCT source_type, source_id FROM ${conv} WHERE order_id IN (SELECT order_id FROM ${w('affected')})
                  EXCEPT SELECT source_type, source_id FROM ${w('attr')})
    SELECT source_type, source_id FROM ${stored}
    EXCEPT (SELECT source_type, source_id FROM lost
            EXCEPT SELECT DISTINCT source_type, source_id FROM ${conv}
                   WHERE (source_type, source_id) IN (SELECT (source_type, source_id) FROM lost)
                     AND order_id NOT IN (SELECT order_id FROM ${w('affected')}))
    UNION SELECT source_type, source_id FROM ${w('attr')}`);
  const input = modelInput(u, { attr: w('used') });
  await db.exec(sql`CREATE TABLE ${w('source_info')} AS ${await SOURCE_INFO.select(input)}`);
  const newTouches = fresh(u, 'touches');
  const firstNew = newTouches
    ? sql`(SELECT source_type, source_id, min(datetime) AS first_touch FROM ${newTouches} GROUP BY source_type, source_id)`
    : sql`(SELECT NULL AS source_type, NULL AS source_id, CAST(NULL AS TIMESTAMP) AS first_touch WHERE false)`;
  await db.exec(sql`UPDATE ${w('source_info')} i
    SET started_at = CASE WHEN s.first_touch < s.started_at THEN s.first_touch ELSE s.started_at END
    FROM (SELECT s.source_type, s.source_id, s.started_at, t.first_touch FROM ${stored} s
          LEFT JOIN ${firstNew} t ON t.source_type = s.source_type AND t.source_id = s.source_id) s
    WHERE i.started_at IS NULL AND s.source_type = i.source_type AND s.source_id = i.source_id`);
  await SOURCE_INFO.complete?.(modelInput(u, { source_info: w('source_info') }));
}

/**
 * conv with the affected orders' rows attributed again; the days and contacts whose rows changed
 * (days, contacts), for the per-day sums; and a stored source's new identity copied into its rows.
 */
async function replaceConv(u: Update): Promise<void> {
  const db = u.scope.db;
  const w = (name: string) => workTable(u, name);
  const conv = u.scope.relation('conv');
  await db.exec(sql`CREATE TABLE ${w('conv')} AS ${await CONV.select(affectedInput(u))}`);
  const old = sql`(SELECT * FROM ${conv} WHERE order_id IN (SELECT order_id FROM ${w('affected')}))`;
  await db.exec(sql`CREATE TABLE ${w('days')} AS SELECT DISTINCT day FROM ${old} UNION SELECT DISTINCT day FROM ${w('conv')}`);
  await db.exec(sql`CREATE TABLE ${w('contacts_changed')} AS
    SELECT DISTINCT contact_id FROM ${old} WHERE NOT is_refund UNION SELECT DISTINCT contact_id FROM ${w('conv')} WHERE NOT is_refund`);
  await db.exec(sql`DELETE FROM ${conv} WHERE order_id IN (SELECT order_id FROM ${w('affected')})`);
  await db.exec(sql`INSERT INTO ${conv} SELECT * FROM ${w('conv')} ORDER BY datetime`);
  const changed = sql`(SELECT n.* FROM ${w('source_info')} n JOIN ${u.scope.relation('source_info')} o USING (source_type, source_id)
    WHERE (${join(IDENTITY.map((c) => sql`o.${ident(c)}`))}) IS DISTINCT FROM (${join(IDENTITY.map((c) => sql`n.${ident(c)}`))}))`;
  const found = await db.one<{ n: bigint }>(sql`SELECT count(*) AS n FROM ${changed}`);
  if (Number(found?.n ?? 0) > 0) {
    await db.exec(sql`UPDATE ${conv} c SET ${join(IDENTITY.map((col) => sql`${ident(col)} = n.${ident(col)}`))}
      FROM ${changed} n WHERE c.source_type = n.source_type AND c.source_id = n.source_id`);
  }
}

/** The old source_key of each stored source whose key the new source_info changes, with the new one. */
async function keyChanges(u: Update): Promise<boolean> {
  const created = await u.scope.db.rowsWritten(sql`CREATE TABLE ${workTable(u, 'keys')} AS
    SELECT o.source_key AS old_key, n.source_key AS new_key
    FROM ${u.scope.relation('source_info')} o JOIN ${workTable(u, 'source_info')} n USING (source_type, source_id)
    WHERE o.source_key <> n.source_key`);
  return created > 0;
}

/** Brings the scope's stored attribution (conv, source_info, the per-day sums) up to date with its new rows (update.ts calls it for a scope that has some). */
export async function reattribute(u: Update): Promise<void> {
  const db = u.scope.db;
  await db.exec(sql`CREATE SCHEMA ${ident(u.work)}`);
  await affectedOrders(u);
  await affectedInputs(u);
  await materialise(affectedInput(u), [ORDER_HEAD, CLICKS, ATTR]);
  await sourceInfo(u);
  await replaceConv(u);
  const rekeyed = await keyChanges(u);
  const stored = u.scope.relation('source_info');
  await db.exec(sql`DELETE FROM ${stored}`);
  await db.exec(sql`INSERT INTO ${stored} SELECT * FROM ${workTable(u, 'source_info')} ORDER BY source_key`);
  await updateSums(u, rekeyed);
  await db.exec(sql`DROP SCHEMA ${ident(u.work)} CASCADE`);
}
