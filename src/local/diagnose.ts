import type { ActivityResponse, ActivityTarget, ContactClick, ContactReport, KnownSource, OrderDiagnosis, OrderLookup } from '../backend.js';
import { instantText, timestampText } from '../model/period.js';
import { EVERY_DATE, MAX_LIMIT, parseItemsQuery } from '../model/query.js';
import { WINDOW_DAYS, type ConversionRecord, type Page } from '../model/types.js';
import type { ItemsQuery } from '../model/query.js';
import type { Scope } from './attribution.js';
import type { Database } from './db.js';
import { firstContactRows } from './resolve.js';
import { CANCELLED_STATUSES } from './schema.js';
import { EMPTY, sql, type Sql } from './sql.js';

/** Why an order row cannot be a conversion whatever the clicks (the attribution's rule, attribution.ts). */
function uncountable(head: { amount_wo_tax: unknown; status: string | null }): { cancelled: boolean; zero: boolean } {
  return {
    cancelled: CANCELLED_STATUSES.includes((head.status ?? '').trim().toLowerCase()),
    zero: Number(String(head.amount_wo_tax)) === 0,
  };
}

/**
 * Why an order is not among the conversions of a period (the `order` command).
 * It reads the order's own rows and its contact's clicks, never the attributed
 * tables, which a CLI command builds for its period only.
 */
export async function diagnoseOrder(
  scope: Scope,
  db: Database,
  orderId: string,
  period?: { dateFrom: string; dateTo: string },
): Promise<OrderDiagnosis> {
  const t = (name: string) => scope.relation(name);
  const rows = await db.all<{ is_refund: boolean; n: bigint }>(
    sql`SELECT coalesce(is_refund, false) AS is_refund, count(*) AS n FROM ${t('orders')} WHERE order_id = ${orderId} GROUP BY 1`,
  );
  if (rows.length === 0) return { orderId, found: false, reasons: [] };
  const head = await db.one<{ contact_id: string; datetime: Date; amount_wo_tax: unknown; status: string | null }>(
    // The order row that counts: the earliest (then first in file), as the attribution takes it.
    sql`SELECT contact_id, datetime, amount_wo_tax, status FROM ${t('orders')}
     WHERE order_id = ${orderId} AND NOT coalesce(is_refund, false) ORDER BY datetime, row_id LIMIT 1`,
  );
  const reasons: string[] = [];
  if (!head) {
    reasons.push('the dataset holds only refunds for this order id, no order row, so there is nothing to attribute them to');
    return { orderId, found: true, reasons };
  }
  const { cancelled, zero } = uncountable(head);
  if (cancelled) reasons.push(`the order is cancelled (status "${head.status}"), so neither it nor its refunds count`);
  if (zero) reasons.push('the order has zero net revenue (amount_wo_tax = 0), which is not a conversion');
  const click = await db.one<{ datetime: Date; source_type: string; source_id: string }>(
    sql`SELECT datetime, source_type, source_id FROM ${t('touches')}
     WHERE contact_id = ${head.contact_id} AND lower(trim(touch)) = 'click' AND datetime <= CAST(${timestampText(head.datetime)} AS TIMESTAMP)
     ORDER BY datetime DESC, source_type DESC, source_id DESC LIMIT 1`,
  );
  const orderAt = instantText(head.datetime);
  if (!click) {
    reasons.push(`contact ${head.contact_id} has no click at or before the order (${orderAt}), so no source can be credited`);
  } else {
    const gap = head.datetime.getTime() - click.datetime.getTime();
    if (gap > WINDOW_DAYS * DAY_MS) {
      reasons.push(
        `the contact's last click before the order was ${instantText(click.datetime)} on ${click.source_type} ${click.source_id}, ${pastWindow(gap)} earlier: outside the ${WINDOW_DAYS}-day window`,
      );
    }
  }
  const orderDay = orderAt.split('T', 1)[0]!;
  if (reasons.length === 0 && period) {
    reasons.push(`the order is a conversion, but none of its transactions falls within ${period.dateFrom}..${period.dateTo} (the order is from ${orderDay})`);
  } else if (reasons.length === 0 && (orderDay.length !== 10 || orderDay < EVERY_DATE.dateFrom)) {
    // A time in a file's zone (or a Parquet file's) can fall on a UTC day no four-digit date names.
    reasons.push(
      `the order's time, ${orderAt}, is on a UTC day past the dates a period names (${EVERY_DATE.dateFrom}..${EVERY_DATE.dateTo}), which this look-up reads in UTC; a period of a time zone whose days reach it lists its conversions (--from, --to and --tz)`,
    );
  }
  return { orderId, found: true, reasons };
}

/** Every date: an order or a contact is looked up wherever it lies. */

type ItemsOf = (query: ItemsQuery) => Promise<Page<ConversionRecord>>;

/** Every attributed transaction of a filter over every date, oldest first, page by page. */
async function everyItem(items: ItemsOf, filter: { orderId?: string; contactId?: string }): Promise<ConversionRecord[]> {
  const rows: ConversionRecord[] = [];
  for (let offset = 0; ; offset += MAX_LIMIT) {
    const page = await items(parseItemsQuery({ ...EVERY_DATE, ...filter, sort: 'datetime', limit: String(MAX_LIMIT), offset: String(offset) }));
    rows.push(...page.rows);
    if (page.rows.length < MAX_LIMIT || rows.length >= page.paging.totalCount) return rows;
  }
}

/** An order by id over every date: its conversions, or why it has none; undefined when the data does not hold it. */
export async function findOrder(scope: Scope, db: Database, orderId: string, items: ItemsOf): Promise<OrderLookup | undefined> {
  const conversions = await everyItem(items, { orderId });
  if (conversions.length) return { orderId, conversions, reasons: [] };
  const diagnosis = await diagnoseOrder(scope, db, orderId);
  if (!diagnosis.found) return undefined;
  return { orderId, conversions: [], reasons: diagnosis.reasons };
}

/** A time as every answer writes it (a year past 9999 too). */
const iso = instantText;
const DAY_MS = 86_400_000;

/** Past the window: what more than the window's days is, in its two largest units (1 h 12 min, 1 ms), rounded down. */
const PAST_UNITS: [string, number][] = [['h', 3_600_000], ['min', 60_000], ['s', 1_000], ['ms', 1]];

/**
 * A time between a click and an order longer than the window, as it is said: in days to one
 * decimal (30.5 days), or where those read as the window itself (30.0 days) the window and what
 * lies past it (30 days and 1 ms), so it never reads as within.
 */
function pastWindow(ms: number): string {
  const days = (ms / DAY_MS).toFixed(1);
  if (Number(days) > WINDOW_DAYS) return `${days} days`;
  let rest = ms - WINDOW_DAYS * DAY_MS;
  const parts: string[] = [];
  for (const [unit, size] of PAST_UNITS) {
    const n = Math.floor(rest / size);
    if (parts.length < 2 && (n > 0 || parts.length > 0)) parts.push(`${n} ${unit}`);
    rest -= n * size;
  }
  return `${WINDOW_DAYS} days and ${parts.filter((p) => !p.startsWith('0 ')).join(' ') || '1 ms'}`;
}

type ContactRow = { contact_id: string; client_contact_id: string | null; email: string | null; first_name: string | null; surname: string | null; how: number };

/** An order's counting row: the earliest order row of its id (as the attribution takes it). */
type OrderHead = { order_id: string; datetime: Date; amount_wo_tax: unknown; status: string | null };

/**
 * A contact by contact id, e-mail (case and surrounding spaces ignored) or client contact id,
 * with its conversions over every date and each of its clicks: the orders it decided, or why
 * it decided none (docs/reporting.md, Attribution: last click within the 30-day window at or before the order).
 */
export async function contactReport(scope: Scope, db: Database, key: string, items: ItemsOf): Promise<ContactReport | undefined> {
  const found = await findContact(scope, db, key);
  if (!found) return undefined;
  const contactId = found.contact_id;
  const report: ContactReport = {
    contact: { contactId, clientContactId: found.client_contact_id, email: found.email, firstName: found.first_name, surname: found.surname },
    matchedBy: (['contactId', 'email', 'clientContactId'] as const)[Number(found.how)]!,
    orders: [],
    conversions: [],
    clicks: [],
  };
  if (!scope.reports) return report;
  report.conversions = await everyItem(items, { contactId });
  // The click that decided each converted order, by the click's instant and source.
  const decided = new Map<string, string[]>();
  const winner = new Map<string, ConversionRecord>();
  for (const record of report.conversions) {
    if (winner.has(record.orderId)) continue;
    winner.set(record.orderId, record);
    const k = `${record.attribution.datetime}|${record.source.type}|${record.source.id}`;
    decided.set(k, [...(decided.get(k) ?? []), record.orderId]);
  }
  const rows = await ordersOf(scope, db, contactId);
  report.orders = await contactOrders(scope, db, rows, winner);
  const later = rows.filter((row) => row.later);
  report.clicks = await contactClicks(scope, db, contactId, report.conversions, decided, winner, later);
  return report;
}

/** The contact a key names (by contact id, e-mail, client contact id), or one only the orders or clicks hold. */
async function findContact(scope: Scope, db: Database, key: string): Promise<ContactRow | undefined> {
  const t = (name: string) => scope.relation(name);
  let found: ContactRow | undefined;
  if (scope.dataset.has('contacts')) {
    // A contact's first row alone: a later row of its id is not read (data check says so), its e-mail and client id neither.
    const matches = sql`contact_id = ${key} OR lower(trim(email)) = lower(trim(${key})) OR client_contact_id = ${key}`;
    found = await db.one<ContactRow>(
      sql`SELECT contact_id, client_contact_id, email, first_name, surname,
              CASE WHEN contact_id = ${key} THEN 0 WHEN lower(trim(email)) = lower(trim(${key})) THEN 1 ELSE 2 END AS how
       FROM ${firstContactRows(scope, matches)}
       WHERE ${matches}
       ORDER BY how, row_id LIMIT 1`,
    );
  }
  if (!found && scope.reports) {
    // A contact that is in the orders or clicks only (no contacts table, or not in it).
    const seen = await db.one<{ n: bigint }>(
      sql`SELECT (SELECT count(*) FROM ${t('orders')} WHERE contact_id = ${key}) + (SELECT count(*) FROM ${t('touches')} WHERE contact_id = ${key}) AS n`,
    );
    if (Number(seen?.n ?? 0) > 0) found = { contact_id: key, client_contact_id: null, email: null, first_name: null, surname: null, how: 0 };
  }
  return found;
}

/**
 * An order id of the contact, at its first row of the contact (an order row before a refund); `later`:
 * the contact's order rows of it are all later rows of the id, not read (DESIGN 4.5: the earliest
 * counts), whose first row, `head_contact`'s at `head_at`, counts.
 */
type ContactOrder = { order_id: string; datetime: Date; later: boolean; head_contact: string | null; head_at: Date | null };

/** The contact's order ids, oldest first, each with the order's counting (earliest) row where that is another's. */
function ordersOf(scope: Scope, db: Database, contactId: string): Promise<ContactOrder[]> {
  const orders = scope.relation('orders');
  return db.all<ContactOrder>(
    sql`WITH mine AS (SELECT order_id, datetime, coalesce(is_refund, false) AS refund, row_id FROM ${orders} WHERE contact_id = ${contactId}),
     heads AS (SELECT order_id, contact_id, datetime, row_id FROM ${orders}
       WHERE NOT coalesce(is_refund, false) AND order_id IN (SELECT order_id FROM mine)
       QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY datetime, row_id) = 1)
     SELECT m.order_id, coalesce(min(m.datetime) FILTER (WHERE NOT m.refund), min(m.datetime)) AS datetime,
            coalesce(bool_or(NOT m.refund) AND NOT bool_or(m.row_id = h.row_id), false) AS later,
            any_value(h.contact_id) AS head_contact, any_value(h.datetime) AS head_at
     FROM mine m LEFT JOIN heads h ON h.order_id = m.order_id GROUP BY m.order_id ORDER BY 2, 1`,
  );
}

/** Why a later row of an order id does not count: the order's first row does. */
const laterRow = (order: ContactOrder) =>
  `this is a later row of order ${order.order_id}, which is not read: where one order id has several order rows the earliest counts, here contact ${order.head_contact}'s of ${iso(order.head_at!)}`;

/** Every order of the contact: a conversion, or why not (the order command's reasons; a later row of an order id, its own). */
async function contactOrders(scope: Scope, db: Database, orders: ContactOrder[], winner: Map<string, ConversionRecord>): Promise<ContactReport['orders']> {
  const out: ContactReport['orders'] = [];
  for (const order of orders) {
    const conversion = !order.later && winner.has(order.order_id);
    const reasons = conversion ? [] : order.later ? [laterRow(order)] : (await diagnoseOrder(scope, db, order.order_id)).reasons;
    out.push({ orderId: order.order_id, datetime: iso(order.datetime), conversion, reasons });
  }
  return out;
}

/** Each click of the contact: the orders it decided (by decided's key), or why it decided none. */
async function contactClicks(
  scope: Scope,
  db: Database,
  contactId: string,
  conversions: ConversionRecord[],
  decided: Map<string, string[]>,
  winner: Map<string, ConversionRecord>,
  later: ContactOrder[],
): Promise<ContactClick[]> {
  const t = (name: string) => scope.relation(name);
  const clicks = await db.all<{ datetime: Date; source_type: string; source_id: string; name: string | null }>(
    sql`SELECT c.datetime, c.source_type, c.source_id, s.name
     FROM ${t('touches')} c LEFT JOIN ${scope.sources()} s ON s.source_type = c.source_type AND s.source_id = c.source_id
     WHERE c.contact_id = ${contactId} AND lower(trim(c.touch)) = 'click'
     ORDER BY c.datetime, c.source_type, c.source_id`,
  );
  // The orders the contact's clicks can decide: those whose counting (earliest) row is the contact's.
  const heads = await db.all<OrderHead>(
    sql`SELECT order_id, datetime, amount_wo_tax, status FROM (
       SELECT order_id, contact_id, datetime, amount_wo_tax, status, row_number() OVER (PARTITION BY order_id ORDER BY datetime, row_id) AS k
       FROM ${t('orders')} WHERE NOT coalesce(is_refund, false)
         AND order_id IN (SELECT order_id FROM ${t('orders')} WHERE contact_id = ${contactId}))
     WHERE k = 1 AND contact_id = ${contactId} ORDER BY datetime, order_id`,
  );
  const names = new Map<string, string>();
  for (const record of conversions) names.set(`${record.source.type}|${record.source.id}`, record.source.name);
  return clicks.map((click): ContactClick => {
    const at = iso(click.datetime);
    const source = {
      type: click.source_type,
      id: click.source_id,
      name: click.name ?? names.get(`${click.source_type}|${click.source_id}`) ?? click.source_id,
    };
    const orderIds = decided.get(`${at}|${click.source_type}|${click.source_id}`) ?? [];
    if (orderIds.length) return { datetime: at, source, orderIds, reason: null };
    return { datetime: at, source, orderIds, reason: whyNot(click.datetime, heads, winner, later) };
  });
}

/**
 * Why a click decided no order: the orders after it, their window and their deciding clicks; and
 * the contact's later rows of an order id (not read) within the window after it.
 */
function whyNot(at: Date, heads: OrderHead[], winner: Map<string, ConversionRecord>, later: ContactOrder[]): string {
  const after = (d: Date) => d.getTime() >= at.getTime() && d.getTime() - at.getTime() <= WINDOW_DAYS * DAY_MS;
  const unread = later.filter((o) => after(o.datetime)).map((o) => `the contact's row of order ${o.order_id} (${iso(o.datetime)}) is a later row of that order id, which is not read: its first row, contact ${o.head_contact}'s of ${iso(o.head_at!)}, counts`);
  if (heads.length === 0) {
    if (unread.length) return unread.join('; ');
    return later.length ? `the contact has no orders of its own: its rows of ${later.map((o) => o.order_id).join(', ')} are later rows of those order ids, which are not read` : 'the contact has no orders';
  }
  return [ownOrders(at, heads, winner), ...unread].join('; ');
}

/** Why a click decided none of the orders whose counting row is the contact's (heads, not empty). */
function ownOrders(at: Date, heads: OrderHead[], winner: Map<string, ConversionRecord>): string {
  const after = heads.filter((h) => h.datetime.getTime() >= at.getTime());
  if (after.length === 0) {
    const last = heads.at(-1)!;
    return `after the order: the contact's last order, ${last.order_id}, was on ${iso(last.datetime)}`;
  }
  const within = after.filter((h) => h.datetime.getTime() - at.getTime() <= WINDOW_DAYS * DAY_MS);
  if (within.length === 0) {
    const next = after[0]!;
    return `outside the ${WINDOW_DAYS}-day window: the next order, ${next.order_id}, came ${pastWindow(next.datetime.getTime() - at.getTime())} later`;
  }
  const notes: string[] = [];
  for (const head of within) {
    const won = winner.get(head.order_id);
    if (won) {
      const same = won.attribution.datetime === iso(at);
      notes.push(
        same
          ? `another click at the same instant won order ${head.order_id} (${won.source.type} ${won.source.id})`
          : `a later click won order ${head.order_id} (${won.attribution.datetime} on ${won.source.type} ${won.source.id})`,
      );
      continue;
    }
    const { cancelled, zero } = uncountable(head);
    if (cancelled) notes.push(`order ${head.order_id} is cancelled (status "${head.status}")`);
    else if (zero) notes.push(`order ${head.order_id} has zero net revenue`);
    else notes.push(`order ${head.order_id} is not a conversion`);
  }
  return notes.join('; ');
}

/**
 * A contact's touches (clicks and opens) of the source an activityUrl names: a campaign or
 * automation by campaign id, a smartflow by its id (and a delivery). Undefined when none.
 */
export async function sourceActivity(scope: Scope, db: Database, target: ActivityTarget, contactId: string): Promise<ActivityResponse | undefined> {
  if (!scope.reports) return undefined;
  let where: Sql;
  if (target.campaignId !== undefined) {
    where = sql`t.source_type IN ('campaign', 'automation') AND coalesce(s.campaign_id, t.source_id) = ${target.campaignId}`;
  } else {
    const delivery = target.deliveryId !== undefined ? sql`s.delivery_id = ${target.deliveryId}` : sql`s.delivery_id IS NULL`;
    where = sql`t.source_type = 'smartflow' AND coalesce(s.smartflow_id, t.source_id) = ${target.smartflowId ?? ''} AND ${delivery}`;
  }
  const rows = await db.all<{ datetime: Date; touch: string; source_type: string; source_id: string; name: string | null }>(
    sql`SELECT t.datetime, lower(trim(t.touch)) AS touch, t.source_type, t.source_id, s.name
     FROM ${scope.relation('touches')} t LEFT JOIN ${scope.sources()} s ON s.source_type = t.source_type AND s.source_id = t.source_id
     WHERE t.contact_id = ${contactId} AND ${where}
     ORDER BY t.datetime, t.source_type, t.source_id, 2`,
  );
  if (rows.length === 0) return undefined;
  return {
    contactId,
    touches: rows.map((r) => ({ datetime: iso(r.datetime), touch: r.touch, source: { type: r.source_type, id: r.source_id, name: r.name ?? r.source_id } })),
  };
}

/** Every source the data holds (its clicks' sources and the sources table), with the ids a detailUrl names. */
export async function knownSources(scope: Scope, db: Database): Promise<KnownSource[]> {
  if (!scope.reports) return [];
  const rows = await db.all<{ type: string; id: string; campaign_id: string | null; smartflow_id: string | null; delivery_id: string | null }>(
    sql`WITH ids AS (
       SELECT DISTINCT source_type, source_id FROM ${scope.relation('touches')}
       ${scope.dataset.has('sources') ? sql`UNION SELECT DISTINCT source_type, source_id FROM ${scope.relation('sources')}` : EMPTY})
     SELECT i.source_type AS type, i.source_id AS id,
            CASE WHEN i.source_type = 'smartflow' THEN NULL ELSE coalesce(s.campaign_id, i.source_id) END AS campaign_id,
            CASE WHEN i.source_type = 'smartflow' THEN coalesce(s.smartflow_id, i.source_id) END AS smartflow_id,
            s.delivery_id
     FROM ids i LEFT JOIN ${scope.sources()} s ON s.source_type = i.source_type AND s.source_id = i.source_id
     WHERE i.source_type IS NOT NULL AND i.source_id IS NOT NULL
     ORDER BY 1, 2`,
  );
  return rows.map((r) => ({ type: r.type, id: r.id, campaignId: r.campaign_id, smartflowId: r.smartflow_id, deliveryId: r.delivery_id }));
}
