/**
 * The attribution of docs/reporting.md as named relations, in the order they are made
 * (ATTRIBUTION): the order heads, the clicks their windows can see, the winning click of each
 * head, the attributed sources' identities, and every attributed transaction converted. With a
 * period (ModelInput.period) each reads only what the period's transactions need.
 */
import { timestampText } from '../../model/period.js';
import { WINDOW_DAYS } from '../../model/types.js';
import { CANCELLED_STATUSES } from '../schema.js';
import { EMPTY, ident, int, join, literal, sql, trusted, type Sql } from '../sql.js';
import { firstContacts, firstSources, referenceRates } from './inputs.js';
import { bounds, inPeriod, type ModelInput, type Relation } from './relation.js';

const WINDOW = int(WINDOW_DAYS);
/** conv's CTE of the period's transactions, which also narrows the contacts read to theirs. */
const TX = trusted('tx');
const CANCELLED = join(CANCELLED_STATUSES.map(literal));

export const ORDER_HEAD: Relation = {
  name: 'order_head',
  holds: "the order row that counts for each order_id (the earliest, then first in file), where it can be attributed: not cancelled, with net revenue; with a period, only for the order ids that have a transaction in it (a refund's order may lie before it)",
  reads: ['orders'],
  transient: true,
  select: (m) => {
    const wanted = m.period
      ? sql`AND order_id IN (SELECT order_id FROM ${m.relation('orders')} WHERE ${inPeriod(m, sql`datetime`)})`
      : EMPTY;
    // the row that counts is chosen among every row of the order; whether it converts, after (a cancelled first row is no conversion)
    return sql`
      SELECT row_id, order_id, contact_id, datetime FROM (
        SELECT row_id, order_id, contact_id, datetime, amount_wo_tax, status,
               row_number() OVER (PARTITION BY order_id ORDER BY datetime, row_id) AS k
        FROM ${m.relation('orders')} WHERE NOT coalesce(is_refund, false) ${wanted})
      WHERE k = 1 AND amount_wo_tax <> 0 AND lower(trim(coalesce(status, ''))) NOT IN (${CANCELLED})`;
  },
};

export const CLICKS: Relation = {
  name: 'clicks',
  holds: "the clicks the heads' windows can see: every click without a period; with one, every click in [from - 30 days, to] and, for the heads outside it (orders of refunds in the period), their contacts' clicks in [earliest such head - 30 days, latest such head]. A view: attr reads it once, so a copy would only hold memory",
  reads: ['touches', 'order_head'],
  kind: 'VIEW',
  transient: true,
  select: async (m) => sql`
      SELECT contact_id, datetime, source_type, source_id FROM ${m.relation('touches')}
      WHERE lower(trim(touch)) = 'click' ${await clickFilter(m)}`,
};

/** The condition on clicks of a period's heads (see CLICKS); none without a period. */
async function clickFilter(m: ModelInput): Promise<Sql> {
  if (!m.period) return EMPTY;
  const { lo, hi } = bounds(m.period);
  const near = sql`datetime >= ${lo} - INTERVAL ${WINDOW} DAY AND datetime < ${hi}`;
  const outsidePeriod = sql`NOT (${inPeriod(m, sql`datetime`)})`;
  const outside = await m.db.one<{ lo: Date | null; hi: Date | null }>(
    sql`SELECT min(datetime) AS lo, max(datetime) AS hi FROM ${m.relation('order_head')} WHERE ${outsidePeriod}`,
  );
  let far = EMPTY;
  if (outside?.lo && outside.hi) {
    const at = (d: Date) => sql`TIMESTAMP ${literal(timestampText(d))}`;
    far = sql` OR (datetime >= ${at(outside.lo)} - INTERVAL ${WINDOW} DAY AND datetime <= ${at(outside.hi)}
                   AND contact_id IN (SELECT contact_id FROM ${m.relation('order_head')} WHERE ${outsidePeriod}))`;
  }
  return sql`AND ((${near})${far})`;
}

export const ATTR: Relation = {
  name: 'attr',
  holds: 'the attributing click of each order head (each can be attributed): the last click within the window, and of the clicks at that instant the greatest (source_type, source_id), so ties never depend on scan order',
  reads: ['order_head', 'clicks'],
  // One ASOF join over (datetime, r, the source's rank): a head's key (its datetime, r = 1) lies after every
  // click at its instant (r = 0), so the click it finds is the latest at or before it and, of the clicks at that
  // instant, the one of the greatest (source_type, source_id), in one pass over the clicks. The sources are ranked
  // in that order first, so that the join sorts numbers rather than text (less memory).
  select: (m) => sql`
      WITH ranks AS (
        SELECT source_type, source_id, CAST(row_number() OVER (ORDER BY source_type, source_id) AS INTEGER) AS s
        FROM (SELECT DISTINCT source_type, source_id FROM ${m.relation('clicks')}))
      SELECT h.order_id, h.row_id AS head_row_id, h.datetime AS order_datetime,
             c.k.d AS touch_datetime, x.source_type, x.source_id
      FROM (SELECT order_id, row_id, contact_id, datetime, struct_pack(d := datetime, r := 1, s := 0) AS k
            FROM ${m.relation('order_head')}) h
      ASOF JOIN (SELECT c.contact_id, struct_pack(d := c.datetime, r := 0, s := x.s) AS k
                 FROM ${m.relation('clicks')} c JOIN ranks x ON x.source_type = c.source_type AND x.source_id = c.source_id) c
        ON h.contact_id = c.contact_id AND h.k >= c.k
      JOIN ranks x ON x.s = c.k.s
      WHERE c.k.d >= h.datetime - INTERVAL ${WINDOW} DAY`,
};

export const SOURCE_INFO: Relation = {
  name: 'source_info',
  holds: "the identities of the attributed sources (the sources table's first row, with fallbacks), a small number per source (source_key) that the per-day sums are keyed by; sourceStartedAt falls back to the source's earliest touch",
  reads: ['attr', 'sources', 'touches'],
  select: (m) => sql`
      WITH used AS (SELECT DISTINCT source_type, source_id FROM ${m.relation('attr')}),
      ids AS (
        SELECT u.source_type, u.source_id, s.name, s.smartflow_name, s.delivery_id, s.delivery_name,
               s.started_at,
               CASE WHEN u.source_type = 'smartflow' THEN coalesce(s.smartflow_id, u.source_id) END AS smartflow_id,
               s.campaign_id
        FROM used u
        LEFT JOIN ${firstSources(m)} s ON s.source_type = u.source_type AND s.source_id = u.source_id)
      SELECT source_type, source_id,
             coalesce(name, source_id) AS name,
             coalesce(campaign_id, CASE WHEN source_type = 'smartflow' THEN smartflow_id ELSE source_id END) AS campaign_id,
             smartflow_id,
             CASE WHEN source_type = 'smartflow' THEN coalesce(smartflow_name, smartflow_id) END AS smartflow_name,
             delivery_id,
             CASE WHEN delivery_id IS NOT NULL THEN coalesce(delivery_name, delivery_id) END AS delivery_name,
             started_at,
             -- a small number per source, which the per-day sums are keyed by
             CAST(row_number() OVER (ORDER BY source_type, source_id) AS INTEGER) AS source_key
      FROM ids`,
  complete: fillStartedAt,
};

/** The earliest touch in the whole dataset, looked up only for the sources that lack sources.started_at. */
async function fillStartedAt(m: ModelInput): Promise<void> {
  const info = m.relation('source_info');
  const unstarted = await m.db.one<{ n: bigint }>(sql`SELECT count(*) AS n FROM ${info} WHERE started_at IS NULL`);
  if (Number(unstarted?.n ?? 0) === 0) return;
  await m.db.exec(sql`
        UPDATE ${info} i SET started_at = f.first_touch
        FROM (
          SELECT source_type, source_id, min(datetime) AS first_touch FROM ${m.relation('touches')}
          WHERE (source_type, source_id) IN (SELECT (source_type, source_id) FROM ${info} WHERE started_at IS NULL)
          GROUP BY source_type, source_id) f
        WHERE i.started_at IS NULL AND f.source_type = i.source_type AND f.source_id = i.source_id`);
}

/**
 * conv's columns in the order it stores them: each its expression over priced (p), source_info (i)
 * and the contacts' first rows (c), the join it needs beyond priced, and whether a query of figures
 * reads it (a report, a series, a total and the rate check: FIGURE_COLUMNS).
 */
const CONV_COLUMNS: readonly { name: string; expr?: Sql; needs?: 'source_info' | 'contacts'; figure?: true }[] = [
  { name: 'row_id' }, { name: 'order_id' },
  ...['contact_id', 'datetime', 'is_refund', 'currency'].map((name) => ({ name, figure: true as const })),
  { name: 'country', expr: sql`coalesce(p.country, c.country)`, needs: 'contacts' },
  ...['amount_wo_tax', 'amount_w_tax', 'day', 'fx_date'].map((name) => ({ name, figure: true as const })),
  { name: 'ref_wo', expr: refAmount(sql`p.amount_wo_tax`, sql`p.rate`), figure: true },
  { name: 'ref_w', expr: refAmount(sql`p.amount_w_tax`, sql`p.rate`), figure: true },
  { name: 'touch_datetime' }, { name: 'order_datetime' },
  // hours from touch to order, rounded half away from zero to 2 decimals (never negative)
  { name: 'centi_hours', expr: sql`(2 * (epoch_ms(p.order_datetime) - epoch_ms(p.touch_datetime)) + 36000) // 72000` },
  { name: 'source_type', figure: true }, { name: 'source_id', figure: true },
  ...['name', 'campaign_id', 'smartflow_id', 'smartflow_name', 'delivery_id', 'delivery_name', 'started_at'].map((name) => ({ name, needs: 'source_info' as const })),
  ...['client_contact_id', 'first_name', 'surname'].map((name) => ({ name, needs: 'contacts' as const })),
];

/**
 * The columns conv holds for a query of figures alone (CONV_OF_FIGURES): the transaction's
 * figures, day and source, without what a record shows besides (the order id, the times of its
 * attribution, the source's identity, the contact's columns), whose joins and copies took about
 * half of conv's time (a year of the mid data: 190 against 105 ms).
 */
export const FIGURE_COLUMNS: readonly string[] = CONV_COLUMNS.filter((c) => c.figure).map((c) => c.name);

/**
 * conv's rows with `columns` (CONV_COLUMNS or the figures' alone), from the attributing clicks
 * (attr), the orders and the rates; joined to source_info and the contacts' first rows where a
 * column needs them.
 */
function convSelect(m: ModelInput, columns: typeof CONV_COLUMNS): Sql {
  const needs = (what: string) => columns.some((c) => c.needs === what);
  const qualified = (name: string, needs: string | undefined) => sql`${trusted(needs === 'source_info' ? 'i' : needs === 'contacts' ? 'c' : 'p')}.${ident(name)}`;
  return sql`
      WITH ${TX} AS (${transactions(m)}),
      -- the rate of each (currency, day) the orders hold: the latest at or before the day; a join to these few rows
      -- costs less than an ASOF join that sorts every transaction
      rates AS (
        SELECT d.currency, d.day, fx.date AS fx_date, fx.rate
        FROM (SELECT DISTINCT currency, CAST(datetime AS DATE) AS day FROM ${m.relation('orders')} WHERE ${inPeriod(m, sql`datetime`)}) d
        ASOF LEFT JOIN ${referenceRates(m)} fx ON d.currency = fx.currency AND d.day >= fx.date),
      priced AS (
        SELECT tx.*, r.fx_date,
               CASE WHEN tx.currency = ${m.referenceCurrency} THEN CAST(1 AS DECIMAL(18,10))
                    WHEN r.fx_date >= tx.day - INTERVAL 7 DAY THEN r.rate END AS rate
        FROM tx LEFT JOIN rates r ON r.currency = tx.currency AND r.day = tx.day)
      SELECT ${join(columns.map((c) => sql`${c.expr ?? qualified(c.name, c.needs)} AS ${ident(c.name)}`))}
      FROM priced p
      -- one source_info row per attributed source, so the join keeps every transaction
      ${needs('source_info') ? sql`JOIN ${m.relation('source_info')} i ON i.source_type = p.source_type AND i.source_id = p.source_id` : EMPTY}
      -- with a period, the first rows of its transactions' contacts only (not every contact's)
      ${needs('contacts') ? sql`LEFT JOIN ${firstContacts(m, m.period ? TX : undefined)} c ON c.contact_id = p.contact_id` : EMPTY}
      -- every transaction (a served dataset): stored in time order, so that a period's zonemaps skip the rest
      ${m.period ? EMPTY : trusted('ORDER BY p.datetime')}`;
}

export const CONV: Relation = {
  name: 'conv',
  holds: "every attributed transaction of the period (of the whole dataset without one): the head's sale and the order's refunds, amounts signed, converted to the reference currency (NULL where no usable rate), with its source and contact; every transaction is stored in time order, so that a period's zonemaps skip the rest",
  reads: ['orders', 'attr', 'source_info', 'fx', 'contacts'],
  select: (m) => convSelect(m, CONV_COLUMNS),
};

/**
 * conv for queries of figures alone (a report, a series, a total): FIGURE_COLUMNS of every attributed
 * transaction of the period, without the joins to the sources' identities and the contacts' first
 * rows. (Tried: the winning clicks found in conv's own statement, attr's query as a CTE, a year's
 * report 0.95x of the time but 1.15x of the peak memory: DuckDB keeps the ASOF join's sorted
 * heads and clicks until the statement ends.)
 */
export const CONV_OF_FIGURES: Relation = {
  name: 'conv',
  holds: "the figures (FIGURE_COLUMNS) of every attributed transaction of the period: the head's sale and the order's refunds, amounts signed, converted to the reference currency (NULL where no usable rate), with the day and the source",
  reads: ['orders', 'attr', 'fx'],
  select: (m) => convSelect(m, CONV_COLUMNS.filter((c) => c.figure)),
};

/** The period's transactions of the attributed orders (the head's sale and every refund), amounts signed. */
function transactions(m: ModelInput): Sql {
  return sql`
        SELECT o.row_id, o.order_id, o.contact_id, o.datetime, coalesce(o.is_refund, false) AS is_refund,
               o.currency, o.country,
               CASE WHEN coalesce(o.is_refund, false) THEN -abs(o.amount_wo_tax) ELSE o.amount_wo_tax END AS amount_wo_tax,
               CASE WHEN coalesce(o.is_refund, false) THEN -abs(o.amount_w_tax) ELSE o.amount_w_tax END AS amount_w_tax,
               CAST(o.datetime AS DATE) AS day,
               a.order_datetime, a.touch_datetime, a.source_type, a.source_id
        FROM ${m.relation('orders')} o JOIN ${m.relation('attr')} a ON o.order_id = a.order_id
        WHERE o.amount_wo_tax <> 0 AND (coalesce(o.is_refund, false) OR o.row_id = a.head_row_id) AND ${inPeriod(m, sql`o.datetime`)}`;
}

/**
 * amount (DECIMAL(18,4)) x rate (DECIMAL(18,10)) rounded half away from zero to cents, exactly. DuckDB multiplies
 * them as DECIMAL(18,14) in 64 bits (fast, but it overflows from 10,000 on); DECIMAL(38) never overflows but its
 * 128-bit rounding costs about 0.8 us a value. So the 64-bit product where the double product says it surely
 * fits (under 9,000), the 128-bit one elsewhere; CASE evaluates each branch only for its own rows.
 */
function refAmount(amount: Sql, rate: Sql): Sql {
  return sql`CASE WHEN abs(CAST(${amount} AS DOUBLE) * CAST(${rate} AS DOUBLE)) < 9000
      THEN CAST(round(${amount} * ${rate}, 2) AS DECIMAL(18,2))
      ELSE CAST(round(CAST(${amount} AS DECIMAL(38,4)) * ${rate}, 2) AS DECIMAL(18,2)) END`;
}

/** The attribution's relations in the order they are made. */
export const ATTRIBUTION: readonly Relation[] = [ORDER_HEAD, CLICKS, ATTR, SOURCE_INFO, CONV];

/** The attribution of a period for queries of figures alone: conv of FIGURE_COLUMNS. */
export const FIGURES_ATTRIBUTION: readonly Relation[] = [ORDER_HEAD, CLICKS, ATTR, SOURCE_INFO, CONV_OF_FIGURES];
