/**
 * A plugin's scope: its views over the dataset and its attribution (docs/reporting.md), kept in
 * DuckDB so that afterwards a query only filters and aggregates. The relations of the
 * attribution and the per-day sums are named in models/ (attribution.ts, daily.ts) and made by
 * one runner (models/relation.ts); a Scope picks which, by how it is made: for a query (CLI: only
 * the transactions of the query's period, reading only the orders that can touch it and the
 * clicks their 30-day windows need), for serving (every transaction once, with the per-day sums),
 * or from an import (where an imported file holds them already).
 */
import { DataError, UsageError } from '../errors.js';
import { timed } from '../timings.js';
import type { Database } from './db.js';
import type { DaySums } from './day-sums.js';
import type { OrderIndex } from './order-index.js';
import { Dataset } from './dataset.js';
import { ATTRIBUTION, FIGURES_ATTRIBUTION } from './models/attribution.js';
import { DAILY } from './models/daily.js';
import { firstSources } from './models/inputs.js';
import { materialise, type ModelInput, type Period } from './models/relation.js';
import { type TableName } from './schema.js';
import { ident, join, literal, sql, table, trusted, type Sql } from './sql.js';

export type { Period } from './models/relation.js';

/** How a scope is opened: the plugin, the reference currency asked, and where an imported file holds the attribution. */
export interface OpenOptions {
  plugin?: string;
  referenceCurrency?: string;
  /**
   * Where this plugin's attribution already lies (an imported file, imported.ts): given the
   * reference currency resolved, the qualified schema holding its conv and source_info, or
   * undefined when it was computed for another currency (then it is computed afresh).
   */
  attributed?: (plugin: string | null, referenceCurrency: string) => Sql | undefined;
}

const covers = (outer: Period, inner: Period) => outer.dateFrom <= inner.dateFrom && inner.dateTo <= outer.dateTo;

/** The plugins a dataset holds: none named when no table has plugin_id. */
export async function listPlugins(dataset: Dataset): Promise<string[]> {
  const parts: Sql[] = [];
  for (const [name, loaded] of dataset.tables) {
    if (loaded.hasPluginId) parts.push(sql`SELECT DISTINCT plugin_id FROM ${table(name)} WHERE plugin_id IS NOT NULL`);
  }
  if (parts.length === 0) return [];
  const rows = await dataset.db.all<{ plugin_id: string }>(sql`${join(parts, trusted(' UNION '))} ORDER BY 1`);
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
        `plugin "${requested}" not found: the dataset at ${dataset.name} has no plugin_id column, so it holds one plugin; drop --plugin`,
      );
    }
    return null;
  }
  if (requested !== undefined) {
    if (!plugins.includes(requested)) {
      throw new UsageError(`plugin "${requested}" not found in ${dataset.name}; plugins found: ${plugins.join(', ')}`);
    }
    return requested;
  }
  if (plugins.length > 1) {
    throw new UsageError(
      `the dataset at ${dataset.name} holds ${plugins.length} plugins (${plugins.join(', ')}); choose one with --plugin`,
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
    scopes.set(id, await Scope.forServing(dataset, `scope_${i}`, plugins.length ? id : null, options));
  }
  return scopes;
}


/** What a query reads of conv: its figures alone (FIGURE_COLUMNS, models/attribution.ts), or whole records. */
export type ConvReads = 'figures' | 'records';

/** What a scope's attribution of every transaction consists of (an import stores these). */
export const ATTRIBUTED_TABLES = ['conv', 'source_info', 'report_day', 'contact_day', 'plugin_contact_day', 'plugin_day'] as const;

/**
 * One plugin's data in its own DuckDB schema: views over the typed tables narrowed to the
 * plugin, then the relations of the attribution (models/): order heads, clicks, `attr`, source
 * identities (`source_info`), every attributed transaction (`conv`) and, where conv holds every
 * transaction, the per-day sums.
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

  /**
   * For a command: the views and the reference currency; the attribution waits for the first
   * query (attribute), which bounds it by that query's period, unless an imported file holds it.
   */
  static async forQuery(dataset: Dataset, schema: string, plugin: string | null, options: OpenOptions = {}): Promise<Scope> {
    const scope = await Scope.open(dataset, schema, plugin, options.referenceCurrency);
    const stored = scope.storedAt(options);
    if (stored) await scope.fromImport(stored);
    return scope;
  }

  /**
   * For a server (and an import to write): every transaction attributed now, with the per-day
   * sums; where an imported file holds them, read there.
   */
  static async forServing(dataset: Dataset, schema: string, plugin: string | null, options: OpenOptions = {}): Promise<Scope> {
    const scope = await Scope.open(dataset, schema, plugin, options.referenceCurrency);
    const stored = scope.storedAt(options);
    if (stored) await scope.fromImport(stored);
    else await scope.attribute();
    return scope;
  }

  /**
   * The scope's schema with a view per table of the dataset narrowed to the plugin (a table without
   * plugin_id, or a dataset of one plugin, is the typed table itself: no view to make), and its
   * reference currency.
   */
  private static async open(dataset: Dataset, schema: string, plugin: string | null, requested: string | undefined): Promise<Scope> {
    const db = dataset.db;
    await db.exec(sql`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
    const inputs = new Map<string, Sql>();
    for (const name of ['orders', 'touches', 'sources', 'fx', 'plugins', 'contacts', 'assets'] as TableName[]) {
      if (!dataset.has(name)) continue;
      if (!dataset.tables.get(name)!.hasPluginId || plugin === null) {
        inputs.set(name, table(name));
        continue;
      }
      // plugin was checked against the plugins the dataset holds; the view cannot take a parameter.
      await db.exec(sql`CREATE OR REPLACE VIEW ${ident(schema)}.${ident(name)} AS SELECT * FROM ${table(name)} WHERE plugin_id = ${literal(plugin)}`);
    }
    const relation = (name: TableName) => inputs.get(name) ?? sql`${ident(schema)}.${ident(name)}`;
    // Without orders and touches there is nothing to attribute: such a scope serves validation only.
    const reports = dataset.has('orders') && dataset.has('touches');
    const reference = reports ? await resolveReferenceCurrency(dataset, relation, plugin, requested) : '';
    const scope = new Scope(dataset, schema, plugin, reference, reports);
    for (const [name, at] of inputs) scope.located.set(name, at);
    return scope;
  }

  /** Where an imported file holds this scope's attribution, for its reference currency. */
  private storedAt(options: OpenOptions): Sql | undefined {
    return this.reports ? options.attributed?.(this.plugin, this.referenceCurrency) : undefined;
  }

  /**
   * The attribution an import computed once, for every transaction: read where it lies (through
   * a view, DuckDB would not use the index on order_id), the per-day sums too. A server copied
   * them into memory until its reports of UTC days came to be summed in JavaScript (day-sums.ts):
   * on a shop of 500 campaigns the copy held about 150 MB, and the server's peak memory past its
   * target, for series only about 12 % faster.
   */
  private async fromImport(stored: Sql): Promise<void> {
    for (const name of ATTRIBUTED_TABLES) this.located.set(name, sql`${stored}.${ident(name)}`);
    this.extent = 'all';
    await this.noteUnpricedDays('report_day');
  }

  /** What the attributed tables hold: every transaction ('all'), one period's, or nothing yet. */
  private extent: 'all' | Period | undefined;

  /** True when conv holds every transaction, and with it the per-day sums (report_day, contact_day, plugin_contact_day, plugin_day). */
  get summarised(): boolean {
    return this.extent === 'all';
  }

  get db(): Database {
    return this.dataset.db;
  }

  /** Relations of this scope that lie elsewhere (an imported file's), by name. */
  private readonly located = new Map<string, Sql>();

  /** A relation of this scope by name: a view of the dataset's table, or one of the attribution's. */
  relation(name: string): Sql {
    return this.located.get(name) ?? sql`${ident(this.schema)}.${ident(name)}`;
  }

  /** The sources of the plugin, the first row of each (source_type, source_id) in file order (models/inputs.ts). */
  sources(): Sql {
    return firstSources(this.input());
  }

  /** What the models read: this scope's relations, for the period given (none: every transaction). */
  private input(period?: Period): ModelInput {
    return {
      db: this.db,
      schema: this.schema,
      referenceCurrency: this.referenceCurrency,
      relation: (name) => this.relation(name),
      has: (name) => this.dataset.has(name),
      ...(period ? { period } : {}),
    };
  }

  /**
   * Makes conv hold every attributed transaction of the period (of the whole dataset without
   * one), and without one the per-day sums too. A scope that holds more already (every
   * transaction, or a period around this one) is left as it is: attribution is per order, so a
   * transaction's row never depends on the period asked. `reads` 'figures': a query of figures
   * alone, for which conv of a period may hold FIGURE_COLUMNS only (every transaction: always all).
   */
  attribute(period?: Period, reads: ConvReads = 'records'): Promise<void> {
    // One at a time: two queries that both find the extent short (a report's figures, then two
    // queries of records at once) would otherwise both make the relations, one over the other.
    const run = this.attributing.then(() => this.attributeNow(period, reads));
    this.attributing = run.catch(() => undefined);
    return run;
  }

  /** The attribution asked, when the scope's ends before it (attribute). */
  private attributing: Promise<void> = Promise.resolve();

  private async attributeNow(period: Period | undefined, reads: ConvReads): Promise<void> {
    if (!this.reports) return;
    const extent = this.extent;
    const enough = this.convReads === 'records' || reads === 'figures';
    if (extent === 'all' || (extent !== undefined && period !== undefined && covers(extent, period) && enough)) return;
    const asked = period ? reads : 'records';
    await timed('attribute the transactions', () => materialise(this.input(period), !period ? [...ATTRIBUTION, ...DAILY] : asked === 'figures' ? FIGURES_ATTRIBUTION : ATTRIBUTION));
    await timed('check missing rates', () => this.noteUnpricedDays(period ? 'conv' : 'report_day'));
    this.extent = period ?? 'all';
    this.convReads = asked;
  }

  /** What conv of the extent holds: every column, or FIGURE_COLUMNS only. */
  private convReads: ConvReads = 'records';

  /** For a server: the per-day sums held in JavaScript too (keepDaySums), undefined where they are not. */
  daySums?: DaySums;

  /**
   * For a server, where summarised: the per-day sums read into JavaScript (day-sums.ts), so that a
   * report of UTC days that filters no transaction is summed without a query on each request.
   */
  async keepDaySums(): Promise<void> {
    if (!this.summarised) return;
    const { DaySums } = await import('./day-sums.js');
    this.daySums = await DaySums.load(this.db, (name) => this.relation(name));
  }

  /** For a server: the attributed transactions by order id held in JavaScript too, once loaded (keepOrderIndex); undefined before and where they are not. */
  orderIndex?: OrderIndex;

  /**
   * For a server: asks for the order index, on the first look-up that could use it (the server
   * loads it then, in the background: ServedDataset.indexOrders); unset elsewhere.
   */
  wantOrderIndex?: () => void;

  /**
   * For a server, where summarised: the attributed transactions read into JavaScript by order id
   * (order-index.ts), so that an order's look-up over UTC days is answered without a query; db:
   * a connection of the load's own (the temporary tables it makes are the connection's); none
   * kept once `stopped` says so.
   */
  async keepOrderIndex(db: Database, stopped: () => boolean): Promise<void> {
    if (!this.summarised) return;
    const { OrderIndex } = await import('./order-index.js');
    const index = await OrderIndex.load(db, this.relation('conv'), stopped);
    if (!stopped()) this.orderIndex = index;
  }

  /**
   * Once attributed: the days (YYYY-MM-DD, ascending) of the extent with a transaction that has no
   * usable exchange rate, so that a query of a period without one need not look (usually none).
   */
  unpricedDays?: string[];

  /** Reads them from the per-day sums where there are any (fewer rows), else from conv itself. */
  private async noteUnpricedDays(from: 'report_day' | 'conv'): Promise<void> {
    const unpriced = from === 'report_day' ? sql`unpriced > 0` : sql`ref_w IS NULL`;
    const rows = await this.db.all<{ day: string }>(
      sql`SELECT DISTINCT strftime(day, '%Y-%m-%d') AS day FROM ${this.relation(from)} WHERE ${unpriced} ORDER BY 1`,
    );
    this.unpricedDays = rows.map((r) => r.day);
  }
}

async function distinctValues(db: Database, query: Sql): Promise<string[]> {
  const rows = await db.all<{ v: string }>(query);
  return rows.map((r) => r.v);
}

/** --reference-currency, then plugins.reference_currency, the single fx.reference_currency, the single order currency. */
async function resolveReferenceCurrency(
  dataset: Dataset,
  t: (name: TableName) => Sql,
  plugin: string | null,
  requested: string | undefined,
): Promise<string> {
  if (requested) return requested.trim().toUpperCase();
  const db = dataset.db;
  if (dataset.has('plugins')) {
    const values = await distinctValues(db, sql`SELECT DISTINCT reference_currency AS v FROM ${t('plugins')} WHERE reference_currency IS NOT NULL`);
    if (values.length === 1) return values[0]!;
  }
  if (dataset.has('fx')) {
    const values = await distinctValues(db, sql`SELECT DISTINCT reference_currency AS v FROM ${t('fx')} WHERE reference_currency IS NOT NULL ORDER BY 1`);
    if (values.length === 1) return values[0]!;
    if (values.length > 1) {
      throw new DataError(
        `cannot tell the reference currency: fx.reference_currency holds ${values.join(', ')}; pass --reference-currency or give the plugin a reference_currency in plugins`,
      );
    }
  }
  const currencies = await distinctValues(db, sql`SELECT DISTINCT currency AS v FROM ${t('orders')} ORDER BY 1`);
  if (currencies.length === 1) return currencies[0]!;
  // No orders at all: nothing to convert, so no currency to tell (every answer is empty).
  if (currencies.length === 0) return '';
  throw new DataError(
    `cannot tell the reference currency${plugin ? ` of plugin ${plugin}` : ''}: no plugins.reference_currency, no single fx.reference_currency, and orders hold ${currencies.length} currencies (${currencies.slice(0, 8).join(', ')}); pass --reference-currency`,
  );
}
