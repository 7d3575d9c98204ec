/**
 * The attribution of docs/reporting.md, kept in DuckDB: afterwards a query
 * only filters and aggregates. One SQL for two uses: the served dataset
 * attributes every transaction once per load (no bound); a CLI command
 * attributes only the transactions of its period (a bound), reading only the
 * orders that can touch the period and the clicks their 30-day windows need.
 */
import { DataError, UsageError } from '../errors.js';
import { WINDOW_DAYS } from '../model/types.js';
import { Database, ident, sqlString, type SqlParams } from './db.js';
import { Dataset } from './dataset.js';
import { CANCELLED_STATUSES, type TableName } from './schema.js';

export interface OpenOptions {
  plugin?: string;
  referenceCurrency?: string;
  /**
   * Build only the views and the reference currency; the attribution waits for
   * the first query (Scope.attribute), which bounds it by that query's period.
   */
  deferAttribution?: boolean;
  /**
   * Where this plugin's attribution already lies (an imported file, imported.ts): given the
   * reference currency resolved, the qualified schema holding its conv and source_info, or
   * undefined when it was computed for another currency (then it is computed afresh).
   */
  attributed?: (plugin: string | null, referenceCurrency: string) => string | undefined;
  /** With attributed: copy the per-day sums into memory (a server, which reads them on every report). */
  keepSumsInMemory?: boolean;
}

/** Inclusive UTC calendar days, YYYY-MM-DD. */
export interface Period {
  dateFrom: string;
  dateTo: string;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A period as SQL bounds on a datetime: [lo, hi), constants so that Parquet statistics and hive partitions prune. */
function bounds(period: Period): { lo: string; hi: string } {
  for (const day of [period.dateFrom, period.dateTo]) {
    if (!DAY.test(day)) throw new Error(`internal: bad period day ${JSON.stringify(day)}`);
  }
  return {
    lo: `CAST(DATE ${sqlString(period.dateFrom)} AS TIMESTAMP)`,
    hi: `CAST(DATE ${sqlString(period.dateTo)} + INTERVAL 1 DAY AS TIMESTAMP)`,
  };
}

const covers = (outer: Period, inner: Period) => outer.dateFrom <= inner.dateFrom && inner.dateTo <= outer.dateTo;

/** The plugins a dataset holds: none named when no table has plugin_id. */
export async function listPlugins(dataset: Dataset): Promise<string[]> {
  const parts: string[] = [];
  for (const [name, loaded] of dataset.tables) {
    if (loaded.hasPluginId) parts.push(`SELECT DISTINCT plugin_id FROM ${ident(`t_${name}`)} WHERE plugin_id IS NOT NULL`);
  }
  if (parts.length === 0) return [];
  const rows = await dataset.db.all<{ plugin_id: string }>(`${parts.join(' UNION ')} ORDER BY 1`);
  return rows.map((r) => r.plugin_id);
}

/**
 * Picks the plugin a local command works on. A dataset without plugin_id is one
 * plugin; with several plugins, --plugin is required.
 */
export async function choosePlugin(dataset: Dataset, requested: string | undefined): Promise<string | null> {
  const plugins = await listPlugins(dataset);
  if (plugins.length === 0) {
    if (requested !== undefined) {
      throw new UsageError(
        `plugin "${requested}" not found: the dataset at ${dataset.dir} has no plugin_id column, so it holds one plugin; drop --plugin`,
      );
    }
    return null;
  }
  if (requested !== undefined) {
    if (!plugins.includes(requested)) {
      throw new UsageError(`plugin "${requested}" not found in ${dataset.dir}; plugins found: ${plugins.join(', ')}`);
    }
    return requested;
  }
  if (plugins.length > 1) {
    throw new UsageError(
      `the dataset at ${dataset.dir} holds ${plugins.length} plugins (${plugins.join(', ')}); choose one with --plugin`,
    );
  }
  return plugins[0]!;
}

/** The plugin id under which a dataset without plugin_id is served or imported. */
export const SINGLE_PLUGIN_ID = 'default';

/**
 * A scope per plugin of the dataset (one, SINGLE_PLUGIN_ID, for a dataset without plugin_id),
 * each attributed for every transaction: what a server serves and an import stores.
 */
export async function buildScopes(dataset: Dataset, options: OpenOptions = {}): Promise<Map<string, Scope>> {
  const plugins = await listPlugins(dataset);
  const scopes = new Map<string, Scope>();
  const ids = plugins.length ? plugins : [SINGLE_PLUGIN_ID];
  for (const [i, id] of ids.entries()) {
    scopes.set(id, await Scope.build(dataset, `scope_${i}`, plugins.length ? id : null, { keepSumsInMemory: true, ...options, deferAttribution: false }));
  }
  return scopes;
}

/** What a scope's attribution of every transaction consists of (an import stores these). */
export const ATTRIBUTED_TABLES = ['conv', 'source_info', 'report_day', 'contact_day'] as const;

const cancelledList = CANCELLED_STATUSES.map(sqlString).join(', ');

/**
 * One plugin's data in its own DuckDB schema: views over the typed tables
 * narrowed to the plugin, then the materialised attribution (`attr`), source
 * identities (`source_info`) and every attributed transaction (`conv`).
 */
export class Scope {
  private constructor(
    readonly dataset: Dataset,
    readonly schema: string,
    readonly plugin: string | null,
    readonly referenceCurrency: string,
    /** False for a dataset without orders or touches: it can validate deliveries but not report. */
    readonly reports: boolean,
  ) {}

  /** What the attributed tables hold: every transaction ('all'), one period's, or nothing yet. */
  private extent: 'all' | Period | undefined;

  /** True when conv holds every transaction, and with it the per-day sums report_day and contact_day. */
  get summarised(): boolean {
    return this.extent === 'all';
  }

  get db(): Database {
    return this.dataset.db;
  }

  /** Tables of this scope that lie elsewhere (an imported file's), by name. */
  private readonly located = new Map<string, string>();

  table(name: string): string {
    return this.located.get(name) ?? `${ident(this.schema)}.${ident(name)}`;
  }

  /**
   * The sources of the plugin, the first row of each (source_type, source_id) in file order; an
   * empty relation with the same columns when the dataset has no sources table.
   */
  firstSources(): string {
    return this.dataset.has('sources')
      ? `(SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY source_type, source_id ORDER BY row_id) AS k
           FROM ${this.table('sources')}) WHERE k = 1)`
      : `(SELECT NULL::VARCHAR AS source_type, NULL::VARCHAR AS source_id, NULL::VARCHAR AS name,
           NULL::VARCHAR AS campaign_id, NULL::VARCHAR AS smartflow_id, NULL::VARCHAR AS smartflow_name,
           NULL::VARCHAR AS delivery_id, NULL::VARCHAR AS delivery_name, NULL::TIMESTAMP AS started_at WHERE false)`;
  }

  static async build(dataset: Dataset, schema: string, plugin: string | null, options: OpenOptions): Promise<Scope> {
    const db = dataset.db;
    await db.exec(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
    for (const name of ['orders', 'touches', 'sources', 'fx', 'plugins', 'contacts', 'assets'] as TableName[]) {
      const target = `${ident(schema)}.${ident(name)}`;
      if (!dataset.has(name)) continue;
      // plugin was checked against the plugins the dataset holds; the view cannot take a parameter.
      const where = dataset.tables.get(name)!.hasPluginId && plugin !== null ? `WHERE plugin_id = ${sqlString(plugin)}` : '';
      await db.exec(`CREATE OR REPLACE VIEW ${target} AS SELECT * FROM ${ident(`t_${name}`)} ${where}`);
    }
    // Without orders and touches there is nothing to attribute: such a scope serves validation only.
    const reports = dataset.has('orders') && dataset.has('touches');
    const reference = reports ? await resolveReferenceCurrency(dataset, schema, plugin, options.referenceCurrency) : '';
    const scope = new Scope(dataset, schema, plugin, reference, reports);
    const stored = reports ? options.attributed?.(plugin, reference) : undefined;
    if (stored) {
      // Computed once by the import, for every transaction: read where it lies (through a view,
      // DuckDB would not use the index on order_id). The per-day sums are small, and scanned
      // several times faster from memory than decompressed from the file on every query: a
      // server (keepSumsInMemory) copies them.
      for (const name of ATTRIBUTED_TABLES) {
        const where = `${stored}.${ident(name)}`;
        if (options.keepSumsInMemory && (name === 'report_day' || name === 'contact_day')) {
          await db.exec(`CREATE OR REPLACE TABLE ${scope.table(name)} AS SELECT * FROM ${where}`);
        } else {
          scope.located.set(name, where);
        }
      }
      scope.extent = 'all';
      await scope.noteUnpricedDays();
    } else if (reports && !options.deferAttribution) {
      await scope.attribute();
    }
    return scope;
  }

  /**
   * Makes conv hold every attributed transaction of the period (of the whole
   * dataset without one). A scope that holds more already (every transaction,
   * or a period around this one) is left as it is: attribution is per order,
   * so a transaction's row never depends on the period asked.
   */
  async attribute(period?: Period): Promise<void> {
    if (!this.reports) return;
    const extent = this.extent;
    if (extent === 'all' || (extent !== undefined && period !== undefined && covers(extent, period))) return;
    await this.materialise(period);
    this.extent = period ?? 'all';
  }

  private async materialise(period: Period | undefined): Promise<void> {
    const t = (name: string) => this.table(name);
    const db = this.db;
    const has = (name: TableName) => this.dataset.has(name);
    const bound = period ? bounds(period) : undefined;
    const inPeriod = (column: string) => (bound ? `${column} >= ${bound.lo} AND ${column} < ${bound.hi}` : 'true');

    // The order row that counts for each order_id: the earliest (then first in file). With a period,
    // only for the order ids that have a transaction in it (a refund's order may lie before it).
    const wanted = bound
      ? `AND order_id IN (SELECT order_id FROM ${t('orders')} WHERE ${inPeriod('datetime')})`
      : '';
    await db.exec(`
      CREATE OR REPLACE TABLE ${t('order_head')} AS
      SELECT row_id, order_id, contact_id, datetime, amount_wo_tax, status FROM (
        SELECT row_id, order_id, contact_id, datetime, amount_wo_tax, status,
               row_number() OVER (PARTITION BY order_id ORDER BY datetime, row_id) AS k
        FROM ${t('orders')} WHERE NOT coalesce(is_refund, false) ${wanted})
      WHERE k = 1`);

    // The clicks the heads' windows can see: every click in [from - 30 days, to] for the heads in the
    // period, and for the heads outside it (orders of refunds in the period) their contacts' clicks in
    // [earliest such head - 30 days, latest such head]. Without a period: every click.
    let clickFilter = '';
    if (bound) {
      const near = `datetime >= ${bound.lo} - INTERVAL ${WINDOW_DAYS} DAY AND datetime < ${bound.hi}`;
      const outside = await db.one<{ lo: Date | null; hi: Date | null }>(
        `SELECT min(datetime) AS lo, max(datetime) AS hi FROM ${t('order_head')} WHERE NOT (${inPeriod('datetime')})`,
      );
      let far = '';
      if (outside?.lo && outside.hi) {
        const at = (d: Date) => `TIMESTAMP ${sqlString(d.toISOString().replace('T', ' ').replace('Z', ''))}`;
        far = ` OR (datetime >= ${at(outside.lo)} - INTERVAL ${WINDOW_DAYS} DAY AND datetime <= ${at(outside.hi)}
                   AND contact_id IN (SELECT contact_id FROM ${t('order_head')} WHERE NOT (${inPeriod('datetime')})))`;
      }
      clickFilter = `AND ((${near})${far})`;
    }
    const existing = await db.one<{ kind: string }>(
      `SELECT table_type AS kind FROM information_schema.tables WHERE table_schema = $schema AND table_name = 'clicks'`,
      { schema: this.schema },
    );
    if (existing) await db.exec(`DROP ${existing.kind === 'VIEW' ? 'VIEW' : 'TABLE'} ${t('clicks')}`);
    await db.exec(`
      CREATE ${bound ? 'TABLE' : 'VIEW'} ${t('clicks')} AS
      SELECT contact_id, datetime, source_type, source_id FROM ${t('touches')}
      WHERE lower(trim(touch)) = 'click' ${clickFilter}`);

    // The instant of the last click within the window, for orders that are not cancelled and have
    // net revenue; then, of the clicks at that instant, the greatest (source_type, source_id), so
    // ties never depend on scan order. Only matched instants are grouped, not every click.
    await db.exec(`
      CREATE OR REPLACE TABLE ${t('attr')} AS
      WITH matched AS (
        SELECT h.order_id, h.row_id AS head_row_id, h.contact_id, h.datetime AS order_datetime, c.datetime AS touch_datetime
        FROM ${t('order_head')} h
        ASOF JOIN ${t('clicks')} c ON h.contact_id = c.contact_id AND h.datetime >= c.datetime
        WHERE c.datetime >= h.datetime - INTERVAL ${WINDOW_DAYS} DAY
          AND h.amount_wo_tax <> 0
          AND lower(trim(coalesce(h.status, ''))) NOT IN (${cancelledList})),
      winners AS (
        SELECT c.contact_id, c.datetime, max(struct_pack(t := c.source_type, i := c.source_id)) AS src
        FROM ${t('clicks')} c
        WHERE (c.contact_id, c.datetime) IN (SELECT (contact_id, touch_datetime) FROM matched)
        GROUP BY c.contact_id, c.datetime)
      SELECT m.order_id, m.head_row_id, m.order_datetime, m.touch_datetime, w.src.t AS source_type, w.src.i AS source_id
      FROM matched m JOIN winners w ON w.contact_id = m.contact_id AND w.datetime = m.touch_datetime`);

    const sources = this.firstSources();
    // Source identities of the attributed sources; sourceStartedAt falls back to the source's earliest
    // touch in the whole dataset, looked up only for the sources that lack sources.started_at.
    await db.exec(`
      CREATE OR REPLACE TABLE ${t('source_info')} AS
      WITH used AS (SELECT DISTINCT source_type, source_id FROM ${t('attr')}),
      ids AS (
        SELECT u.source_type, u.source_id, s.name, s.smartflow_name, s.delivery_id, s.delivery_name,
               s.started_at,
               CASE WHEN u.source_type = 'smartflow' THEN coalesce(s.smartflow_id, u.source_id) END AS smartflow_id,
               s.campaign_id
        FROM used u
        LEFT JOIN ${sources} s ON s.source_type = u.source_type AND s.source_id = u.source_id)
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
      FROM ids`);
    const unstarted = await db.one<{ n: bigint }>(`SELECT count(*) AS n FROM ${t('source_info')} WHERE started_at IS NULL`);
    if (Number(unstarted?.n ?? 0) > 0) {
      await db.exec(`
        UPDATE ${t('source_info')} i SET started_at = f.first_touch
        FROM (
          SELECT source_type, source_id, min(datetime) AS first_touch FROM ${t('touches')}
          WHERE (source_type, source_id) IN (SELECT (source_type, source_id) FROM ${t('source_info')} WHERE started_at IS NULL)
          GROUP BY source_type, source_id) f
        WHERE i.started_at IS NULL AND f.source_type = i.source_type AND f.source_id = i.source_id`);
    }

    const contacts = has('contacts')
      ? `(SELECT contact_id, client_contact_id, first_name, surname, country FROM (
           SELECT *, row_number() OVER (PARTITION BY contact_id ORDER BY row_id) AS k FROM ${t('contacts')}) WHERE k = 1)`
      : `(SELECT NULL::VARCHAR AS contact_id, NULL::VARCHAR AS client_contact_id, NULL::VARCHAR AS first_name,
           NULL::VARCHAR AS surname, NULL::VARCHAR AS country WHERE false)`;
    const fx = has('fx')
      ? `(SELECT currency, date, rate FROM ${t('fx')}
           WHERE reference_currency IS NULL OR reference_currency = $reference)`
      : `(SELECT NULL::VARCHAR AS currency, NULL::DATE AS date, NULL::DECIMAL(18,10) AS rate WHERE false)`;

    // Every attributed transaction with its amounts converted (NULL where no usable rate).
    await db.exec(
      `
      CREATE OR REPLACE TABLE ${t('conv')} AS
      WITH tx AS (
        SELECT o.row_id, o.order_id, o.contact_id, o.datetime, coalesce(o.is_refund, false) AS is_refund,
               o.currency, o.country,
               CASE WHEN coalesce(o.is_refund, false) THEN -abs(o.amount_wo_tax) ELSE o.amount_wo_tax END AS amount_wo_tax,
               CASE WHEN coalesce(o.is_refund, false) THEN -abs(o.amount_w_tax) ELSE o.amount_w_tax END AS amount_w_tax,
               CAST(o.datetime AS DATE) AS day,
               a.order_datetime, a.touch_datetime, a.source_type, a.source_id
        FROM ${t('orders')} o JOIN ${t('attr')} a ON o.order_id = a.order_id
        WHERE o.amount_wo_tax <> 0 AND (coalesce(o.is_refund, false) OR o.row_id = a.head_row_id) AND ${inPeriod('o.datetime')}),
      priced AS (
        SELECT tx.*, fx.date AS fx_date,
               CASE WHEN tx.currency = $reference THEN CAST(1 AS DECIMAL(18,10))
                    WHEN fx.date >= tx.day - INTERVAL 7 DAY THEN fx.rate END AS rate
        FROM tx ASOF LEFT JOIN ${fx} fx ON tx.currency = fx.currency AND tx.day >= fx.date)
      SELECT p.row_id, p.order_id, p.contact_id, p.datetime, p.is_refund, p.currency,
             coalesce(p.country, c.country) AS country,
             p.amount_wo_tax, p.amount_w_tax, p.day, p.fx_date,
             ${refAmount('p.amount_wo_tax', 'p.rate')} AS ref_wo,
             ${refAmount('p.amount_w_tax', 'p.rate')} AS ref_w,
             p.touch_datetime, p.order_datetime,
             -- hours from touch to order, rounded half away from zero to 2 decimals (never negative)
             (2 * (epoch_ms(p.order_datetime) - epoch_ms(p.touch_datetime)) + 36000) // 72000 AS centi_hours,
             p.source_type, p.source_id,
             i.name, i.campaign_id, i.smartflow_id, i.smartflow_name, i.delivery_id, i.delivery_name, i.started_at,
             c.client_contact_id, c.first_name, c.surname
      FROM priced p
      JOIN ${t('source_info')} i ON i.source_type = p.source_type AND i.source_id = p.source_id
      LEFT JOIN ${contacts} c ON c.contact_id = p.contact_id
      -- every transaction (a served dataset): stored in time order, so that a period's zonemaps skip the rest
      ${bound ? '' : 'ORDER BY p.datetime'}`,
      { reference: this.referenceCurrency },
    );
    if (!bound) {
      await this.summarise();
      await this.noteUnpricedDays();
    }
  }

  /**
   * The per-day sums that let a report of any period read a few rows per day instead of every
   * transaction (queries.ts): report_day, the sums of each day, source and order currency, exact
   * decimals, with the day's first and last conversion; contact_day, each day a contact converted
   * through a source, with the previous such day (prev_day). A contact counts once in a period:
   * on the one day of it in the period whose previous day lies before the period, so unique
   * contacts are a count of rows, never a DISTINCT over the period's transactions.
   */
  private async summarise(): Promise<void> {
    const t = (name: string) => this.table(name);
    await this.db.exec(`
      CREATE OR REPLACE TABLE ${t('report_day')} AS
      SELECT c.day, i.source_key, c.currency,
        count(*) FILTER (WHERE NOT c.is_refund) AS n,
        sum(c.amount_wo_tax) FILTER (WHERE NOT c.is_refund) AS wo,
        sum(c.amount_w_tax) FILTER (WHERE NOT c.is_refund) AS w,
        count(*) FILTER (WHERE c.is_refund) AS rn,
        sum(c.amount_wo_tax) FILTER (WHERE c.is_refund) AS rwo,
        sum(c.amount_w_tax) FILTER (WHERE c.is_refund) AS rw,
        sum(c.ref_wo) FILTER (WHERE NOT c.is_refund) AS ref_wo,
        sum(c.ref_w) FILTER (WHERE NOT c.is_refund) AS ref_w,
        sum(c.ref_wo) FILTER (WHERE c.is_refund) AS ref_rwo,
        sum(c.ref_w) FILTER (WHERE c.is_refund) AS ref_rw,
        min(c.datetime) FILTER (WHERE NOT c.is_refund) AS first_at,
        max(c.datetime) FILTER (WHERE NOT c.is_refund) AS last_at,
        -- transactions without a usable exchange rate (a report of the day is then a data error)
        count(*) FILTER (WHERE c.ref_w IS NULL) AS unpriced
      FROM ${t('conv')} c JOIN ${t('source_info')} i ON i.source_type = c.source_type AND i.source_id = c.source_id
      GROUP BY c.day, i.source_key, c.currency
      ORDER BY c.day, i.source_key, c.currency`);
    await this.db.exec(`
      CREATE OR REPLACE TABLE ${t('contact_day')} AS
      WITH converted AS (
        SELECT DISTINCT c.day, i.source_key, c.contact_id
        FROM ${t('conv')} c JOIN ${t('source_info')} i ON i.source_type = c.source_type AND i.source_id = c.source_id
        WHERE NOT c.is_refund)
      SELECT day, source_key, lag(day) OVER (PARTITION BY source_key, contact_id ORDER BY day) AS prev_day
      FROM converted ORDER BY day, source_key`);
  }

  /**
   * Where summarised: the days (YYYY-MM-DD, ascending) with a transaction that has no usable
   * exchange rate, so that a query of a period without one need not look (usually none).
   */
  unpricedDays?: string[];

  private async noteUnpricedDays(): Promise<void> {
    const rows = await this.db.all<{ day: string }>(
      `SELECT DISTINCT strftime(day, '%Y-%m-%d') AS day FROM ${this.table('report_day')} WHERE unpriced > 0 ORDER BY 1`,
    );
    this.unpricedDays = rows.map((r) => r.day);
  }
}

/**
 * amount (DECIMAL(18,4)) x rate (DECIMAL(18,10)) rounded half away from zero to cents, exactly. DuckDB multiplies
 * them as DECIMAL(18,14) in 64 bits (fast, but it overflows from 10,000 on); DECIMAL(38) never overflows but its
 * 128-bit rounding costs about 0.8 us a value. So the 64-bit product where the double product says it surely
 * fits (under 9,000), the 128-bit one elsewhere; CASE evaluates each branch only for its own rows.
 */
function refAmount(amount: string, rate: string): string {
  return `CASE WHEN abs(CAST(${amount} AS DOUBLE) * CAST(${rate} AS DOUBLE)) < 9000
      THEN CAST(round(${amount} * ${rate}, 2) AS DECIMAL(18,2))
      ELSE CAST(round(CAST(${amount} AS DECIMAL(38,4)) * ${rate}, 2) AS DECIMAL(18,2)) END`;
}

/** The path of a source's detailUrl (docs/reporting.md, Identity and links; queries.ts adds the query string naming the source and period), from columns source_type, campaign_id, smartflow_id, delivery_id. */
export function detailUrlSql(prefix = ''): string {
  const c = (name: string) => `${prefix}${name}`;
  return `CASE WHEN ${c('source_type')} = 'smartflow'
    THEN '/v1/deliveries/' || url_encode(${c('smartflow_id')}) || coalesce('/' || url_encode(${c('delivery_id')}), '') || '/conversions'
    ELSE '/v1/campaigns/' || url_encode(${c('campaign_id')}) || '/conversions' END`;
}

/** A record's activityUrl (docs/reporting.md, Identity and links): the recipient's activity in the delivery. */
export function activityUrlSql(prefix = ''): string {
  const c = (name: string) => `${prefix}${name}`;
  return `CASE WHEN ${c('source_type')} = 'smartflow'
    THEN '/v1/deliveries/' || url_encode(${c('smartflow_id')}) || coalesce('/' || url_encode(${c('delivery_id')}), '')
         || '/recipients/' || url_encode(${c('contact_id')}) || '/activity'
    ELSE '/v1/campaigns/' || url_encode(${c('campaign_id')}) || '/recipients/' || url_encode(${c('contact_id')}) || '/activity' END`;
}

async function distinctValues(db: Database, sql: string, params: SqlParams = {}): Promise<string[]> {
  const rows = await db.all<{ v: string }>(sql, params);
  return rows.map((r) => r.v);
}

/** --reference-currency, then plugins.reference_currency, the single fx.reference_currency, the single order currency. */
async function resolveReferenceCurrency(
  dataset: Dataset,
  schema: string,
  plugin: string | null,
  requested: string | undefined,
): Promise<string> {
  if (requested) return requested.trim().toUpperCase();
  const db = dataset.db;
  const t = (name: string) => `${ident(schema)}.${ident(name)}`;
  if (dataset.has('plugins')) {
    const values = await distinctValues(
      db,
      `SELECT DISTINCT reference_currency AS v FROM ${t('plugins')} WHERE reference_currency IS NOT NULL`,
    );
    if (values.length === 1) return values[0]!;
  }
  if (dataset.has('fx')) {
    const values = await distinctValues(
      db,
      `SELECT DISTINCT reference_currency AS v FROM ${t('fx')} WHERE reference_currency IS NOT NULL ORDER BY 1`,
    );
    if (values.length === 1) return values[0]!;
    if (values.length > 1) {
      throw new DataError(
        `cannot tell the reference currency: fx.reference_currency holds ${values.join(', ')}; pass --reference-currency or give the plugin a reference_currency in plugins`,
      );
    }
  }
  const currencies = await distinctValues(db, `SELECT DISTINCT currency AS v FROM ${t('orders')} ORDER BY 1`);
  if (currencies.length === 1) return currencies[0]!;
  // No orders at all: nothing to convert, so no currency to tell (every answer is empty).
  if (currencies.length === 0) return '';
  throw new DataError(
    `cannot tell the reference currency${plugin ? ` of plugin ${plugin}` : ''}: no plugins.reference_currency, no single fx.reference_currency, and orders hold ${currencies.length} currencies (${currencies.slice(0, 8).join(', ')}); pass --reference-currency`,
  );
}
