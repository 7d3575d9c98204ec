/**
 * A dataset served to several plugins: attribution computed once per plugin at
 * load time, each request on a DuckDB connection lent by the dataset's pool.
 */
import { availableParallelism } from 'node:os';
import { DataError } from '../errors.js';
import { LocalBackend } from '../local/backend.js';
import { dataVersion, datasetAt, open, requireTenantTables, whereTableWouldBe, type Named } from '../local/open.js';
import type { Dataset } from '../local/dataset.js';
import type { Database } from '../local/db.js';
import { buildScopes, listPlugins, type Scope } from '../local/attribution.js';
import type { RenderLimits } from '../validation/limits.js';
import { int, sql } from '../local/sql.js';
import { DEFAULT_VERSION_GRACE_SECONDS } from './limits.js';
import { ConnectionPool, defaultPoolSize, type Lease, type PoolStats } from './pool.js';

/** DuckDB threads of a served dataset: the cores shared among the pooled connections, at least one. */
export function threadsPerQuery(poolSize: number, cores = availableParallelism()): number {
  return Math.max(1, Math.floor(cores / poolSize));
}

/** Prepared statements a pooled connection keeps for reuse (a few query shapes per route and sort). */
const STATEMENTS_PER_CONNECTION = 32;

export interface ServeOptions extends Named {
  referenceCurrency?: string;
  /** Bounds of template rendering in delivery validation; the defaults when left out. */
  renderLimits?: RenderLimits;
  /** DuckDB connections the requests share (see pool.ts); four per core when left out. */
  poolSize?: number;
  /**
   * How long, in seconds, the data a reload replaced stays answerable to requests pinned to its
   * version (the Convx-Data-Version request header); 0 keeps none. DEFAULT_VERSION_GRACE_SECONDS when left out.
   */
  versionGraceSeconds?: number;
  /** DuckDB's memory_limit of the dataset's database, in bytes (a plugin file's, plugin-files.ts); DuckDB's default when left out. */
  memoryLimitBytes?: number;
  /**
   * When each plugin's order index is read (ServedDataset.indexOrders), in the background either
   * way: 'eager' right after the load (`convx serve` of one dataset), 'lazy' (the default) on the
   * first look-up that could use it (a plugin file, which may only ever be asked for reports).
   */
  orderIndex?: 'eager' | 'lazy';
  /** Serve a dataset of several plugins whose orders, touches or contacts have no plugin_id (every token reads them): `--shared-tables`. */
  sharedTables?: boolean;
}

/**
 * What a server needs of a dataset: orders and touches for the reports, or at
 * least contacts for delivery validation (a pipeline that only validates ships
 * contacts and assets). Orders without touches, or touches without orders, are
 * a mistake rather than a validation-only dataset.
 */
function requireServable(dataset: Dataset): void {
  const where = datasetAt(dataset);
  const expected = (table: string) => whereTableWouldBe(dataset, table);
  const orders = dataset.has('orders');
  const touches = dataset.has('touches');
  if (orders !== touches) {
    const missing = orders ? 'touches' : 'orders';
    throw new DataError(`${where} has ${orders ? 'orders' : 'touches'} but no ${missing} table${expected(missing)}; reports need both`);
  }
  if (!orders && !dataset.has('contacts')) {
    throw new DataError(
      `${where} has nothing to serve: reports need orders and touches, delivery validation needs contacts` +
        (dataset.imported ? ' (its source had none of them when it was imported)' : ' (orders.csv, touches.csv, contacts.csv, or the same as .csv.gz, .parquet, .json(l) or a folder)'),
    );
  }
}

/** A dataset a request holds: it is not closed (by a reload or an eviction) until release() is called. */
export interface Held {
  dataset: ServedDataset;
  release: () => void;
}

/**
 * What the app answers requests from (app.ts): one dataset for every plugin (DatasetHolder, by
 * servedFrom), or a directory of plugin files, each opened on its plugin's first request
 * (plugin-files.ts). A request only ever holds its own plugin's data.
 */
export interface ServedData {
  /** True when the plugin has data here (the check after the token). */
  has(plugin: string): boolean;
  /**
   * The data that answers the plugin now, or the data of the version a request pins
   * (Convx-Data-Version), held until release(); undefined when the plugin has none here or that
   * version is not held.
   */
  hold(plugin: string, version?: string): Promise<Held | undefined>;
  /** The version the plugin is answered from now (a 412 names it); undefined when it has no data here. */
  versionOf(plugin: string): string | undefined;
  /** The connections requests share (the gate's bounds). */
  readonly poolSize: number;
  /** When the data served now was loaded (the health route). */
  readonly loadedAt: Date;
  /** When the latest reload failed, the data loaded before still served; undefined once one succeeds (the health route). */
  readonly reloadFailedAt?: Date;
  /** The version of the one dataset served now (the health route); undefined for plugin files, a version each. */
  readonly dataVersion?: string;
}

/** One dataset for every plugin as ServedData: the one served now, or the one of a pinned version (byVersion). */
export function servedFrom(
  dataset: () => ServedDataset,
  datasetOf?: (dataVersion: string) => ServedDataset | undefined,
  reloadFailedAt: () => Date | undefined = () => undefined,
): ServedData {
  const held = (data: ServedDataset | undefined): Held | undefined => (data ? { dataset: data, release: data.retain() } : undefined);
  return {
    has: (plugin) => dataset().has(plugin),
    hold: async (_plugin, version) => {
      if (version === undefined) return held(dataset());
      const current = dataset();
      return held(datasetOf ? datasetOf(version) : current.version === version ? current : undefined);
    },
    versionOf: () => dataset().version,
    get poolSize() {
      return dataset().poolStats.size;
    },
    get loadedAt() {
      return dataset().loadedAt;
    },
    get reloadFailedAt() {
      return reloadFailedAt();
    },
    get dataVersion() {
      return dataset().version;
    },
  };
}

/** What `convx serve` logs of the data it serves (on listening and after a reload). */
export interface ServedSummary {
  plugins: string[];
  poolSize: number;
  /** The version of the one dataset served; a directory of plugin files has one per file. */
  dataVersion?: string;
  maxOpenPlugins?: number;
  /** The plugin files' memory budget in bytes (--max-plugin-memory), when one is set. */
  maxPluginMemory?: number;
  /** False when only delivery validation is served (a dataset without orders). */
  reports: boolean;
}

export class ServedDataset {
  private inFlight = 0;
  private retired = false;
  private drained?: () => void;
  private readonly pool: ConnectionPool;
  private readonly leases = new WeakMap<LocalBackend, Lease>();
  private constructor(
    readonly dir: string,
    /**
     * The version of the data (local/open.ts, dataVersion): a hash of the files as they were read
     * and of the reference currency asked, the same as local mode computes on those files. A reload
     * of unchanged files keeps it (and the ETags with it); a changed file changes it.
     */
    readonly version: string,
    private readonly dataset: Dataset,
    private readonly scopes: Map<string, Scope>,
    readonly loadedAt: Date,
    poolSize: number,
    private readonly renderLimits?: RenderLimits,
  ) {
    this.pool = new ConnectionPool(async () => {
      const db = await dataset.db.connect();
      // The served tables never change under a connection (a reload is another dataset): reuse statements.
      db.keepStatements(STATEMENTS_PER_CONNECTION);
      return db;
    }, poolSize);
  }

  static async load(dir: string, options: ServeOptions = {}): Promise<ServedDataset> {
    const poolSize = options.poolSize ?? defaultPoolSize();
    if (!Number.isInteger(poolSize) || poolSize < 1) throw new Error(`internal: a pool size must be a whole number of at least 1, not ${poolSize}`);
    const { dataset, attributed, identity } = await open(dir, [], { name: options.name, ...(options.memoryLimitBytes ? { memoryLimitBytes: options.memoryLimitBytes } : {}) });
    try {
      requireServable(dataset);
      // before the attribution, which takes a while on a large dataset
      if (!options.sharedTables) requireTenantTables(dataset, (await listPlugins(dataset)).length, "every plugin's token would read all of");
      const scopes = await buildScopes(dataset, { ...options, ...(attributed ? { attributed } : {}) });
      for (const scope of scopes.values()) await scope.keepDaySums();
      // The attribution above ran on every core. Requests now run side by side, one per pooled
      // connection, so each query gets its share of the cores: with the default pool (four per
      // core), one thread each, which spends less CPU per request than splitting every small query.
      await dataset.db.exec(sql`SET threads = ${int(threadsPerQuery(poolSize))}`);
      const served = new ServedDataset(dir, dataVersion(identity, options), dataset, scopes, new Date(), poolSize, options.renderLimits);
      for (const scope of scopes.values()) scope.wantOrderIndex = () => void served.indexOrders(scope);
      if (options.orderIndex === 'eager') void served.indexAllOrders();
      return served;
    } catch (error) {
      dataset.db.close();
      throw error;
    }
  }

  /** False for a dataset of contacts and assets only: it answers delivery validation, and the report routes a 404. */
  get reports(): boolean {
    return this.dataset.has('orders') && this.dataset.has('touches');
  }

  get plugins(): string[] {
    return [...this.scopes.keys()];
  }

  has(plugin: string): boolean {
    return this.scopes.has(plugin);
  }

  /**
   * A backend scoped to one plugin on a connection lent by the pool (waiting
   * for one when all are lent); close() it when the request ends, which gives
   * the connection back. Queries of one request run in turn on its connection.
   * With pooled false it gets a connection of its own instead.
   */
  async backend(plugin: string, { pooled = true }: { pooled?: boolean } = {}): Promise<LocalBackend> {
    const scope = this.scopes.get(plugin);
    if (!scope) throw new Error(`plugin ${plugin} is not served`);
    this.inFlight++;
    try {
      if (!pooled) {
        // A connection of its own, closed with the backend: for work that may hold it long
        // (a validation waits on template renders), so that it never keeps reports waiting.
        return new LocalBackend(scope, await scope.db.connect(), () => this.release(), this.renderLimits, this.version);
      }
      const lease = await this.pool.acquire();
      // LocalBackend.close() closes its db (here: gives the connection back), then calls onClose.
      const backend = new LocalBackend(scope, lease.db, () => this.release(), this.renderLimits, this.version);
      this.leases.set(backend, lease);
      return backend;
    } catch (error) {
      this.release();
      throw error;
    }
  }

  /** Says that a backend's request failed: its connection is closed and replaced rather than lent again. */
  discard(backend: LocalBackend): void {
    this.leases.get(backend)?.discard();
  }

  /**
   * The memory this dataset holds, in bytes: DuckDB's in use by its database (duckdb_memory(): its
   * buffers, in-memory tables and running queries), and its scopes' per-day sums and order index held in JavaScript.
   */
  async memoryUsage(): Promise<number> {
    const release = this.retain();
    try {
      const row = await this.dataset.db.one<{ used: bigint | number | null }>(sql`SELECT sum(memory_usage_bytes) AS used FROM duckdb_memory()`);
      let sums = 0;
      for (const scope of this.scopes.values()) sums += (scope.daySums?.bytes ?? 0) + (scope.orderIndex?.bytes ?? 0);
      return Number(row?.used ?? 0) + sums;
    } finally {
      release();
    }
  }

  /** Requests holding a backend of this dataset right now. */
  get requestsInFlight(): number {
    return this.inFlight;
  }

  /** The connection pool's figures (for tests and diagnostics). */
  get poolStats(): PoolStats {
    return this.pool.stats;
  }

  /**
   * Counts a request that will use this data before it has a backend (it waits for its turn
   * first): the data is not closed by retire() until the returned function is called.
   */
  retain(): () => void {
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.release();
    };
  }

  private release(): void {
    this.inFlight--;
    if (this.retired && this.inFlight === 0) this.drained?.();
  }

  /** Each scope's order index being loaded (indexOrders), with the connection it loads on. */
  private readonly indexing = new Map<Scope, { db?: Database; done: Promise<void> }>();

  /**
   * Loads a scope's order index (Scope.keepOrderIndex) in the background, once, on a connection of
   * its own: right after the load (ServeOptions.orderIndex 'eager'), else asked by the first
   * look-up that could use it (Scope.wantOrderIndex), so that the server is ready without it
   * (about 2 s for a shop of 2M orders). Look-ups take the SQL way meanwhile, or for good where it
   * fails: the index is only a faster way to the same answers. Resolves when the index is loaded.
   */
  indexOrders(scope: Scope): Promise<void> {
    const known = this.indexing.get(scope);
    if (known) return known.done;
    if (this.retired) return Promise.resolve();
    const release = this.retain();
    const entry: { db?: Database; done: Promise<void> } = { done: Promise.resolve() };
    entry.done = (async () => {
      try {
        entry.db = await scope.db.connect();
        await scope.keepOrderIndex(entry.db, () => this.retired);
      } catch {
        // interrupted by retire(), or a query that failed: the look-ups keep the SQL way
      } finally {
        // closed, and no longer there for retire() to interrupt
        entry.db?.close();
        entry.db = undefined;
        release();
      }
    })();
    this.indexing.set(scope, entry);
    return entry.done;
  }

  /** Loads every scope's order index now (indexOrders), for a caller that wants it before the first look-up. */
  async indexAllOrders(): Promise<void> {
    await Promise.all([...this.scopes.values()].map((scope) => this.indexOrders(scope)));
  }

  /** Closes the database once the requests still using it have finished (an order index still loading is interrupted). */
  async retire(): Promise<void> {
    this.retired = true;
    for (const { db } of this.indexing.values()) db?.interrupt();
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    this.pool.close();
    // A connection whose interrupted query still runs must end before the database closes.
    await this.pool.settled();
    this.dataset.db.close();
  }
}

/**
 * The dataset being served now. reload() loads a fresh copy beside it and swaps
 * it in when complete, without dropping requests in flight; a failed load
 * keeps the current one. A reload asked for while one runs is not folded into
 * it (files may have changed after it began reading them): exactly one more
 * reload is scheduled to run after it, however many signals arrive meanwhile.
 *
 * The data a reload replaced, when its version differs, stays answerable to
 * requests pinned to that version (byVersion) for the grace period
 * (versionGraceSeconds), so that a client paging through it ends on the data it
 * began with; then it closes once its requests end. At most one replaced version
 * is kept, and only until the next reload begins: the memory held is at most two
 * datasets (the one served and the one kept, or the one being loaded), beyond
 * those finishing requests in flight.
 */
export class DatasetHolder {
  private running?: Promise<void>;
  private queued?: Promise<void>;
  private readonly retiring = new Set<Promise<void>>();
  /** The version a reload replaced, answerable to pinned requests until its timer fires. */
  private kept?: { dataset: ServedDataset; timer: NodeJS.Timeout };
  /** How many loads have completed and been swapped in (the first one included). */
  generation = 1;
  /** When the latest reload failed (the data before still served); undefined once one succeeds. */
  reloadFailedAt?: Date;

  constructor(
    public current: ServedDataset,
    private readonly options: ServeOptions,
    /** How a dataset is loaded (a test may wrap the real load to hold it at a known point). */
    private readonly load: (dir: string, options: ServeOptions) => Promise<ServedDataset> = (dir, o) => ServedDataset.load(dir, o),
  ) {}

  /** The data of a version: the one served now, or the one a reload replaced while its grace period lasts; else undefined. */
  byVersion(version: string): ServedDataset | undefined {
    if (this.current.version === version) return this.current;
    if (this.kept?.dataset.version === version) return this.kept.dataset;
    return undefined;
  }

  /** The versions answerable now: the one served, then the one kept (if any). */
  get versions(): string[] {
    return [this.current.version, ...(this.kept ? [this.kept.dataset.version] : [])];
  }

  reload(): Promise<void> {
    if (this.queued) return this.queued;
    if (this.running) {
      const after = this.running;
      this.queued = after
        .catch(() => undefined)
        .then(() => {
          this.queued = undefined;
          return this.start();
        });
      return this.queued;
    }
    return this.start();
  }

  /** What `convx serve` logs of the data served now. */
  summary(): ServedSummary {
    const current = this.current;
    return { plugins: current.plugins, poolSize: current.poolStats.size, dataVersion: current.version, reports: current.reports };
  }

  /** Requests holding the data served now. */
  get requestsInFlight(): number {
    return this.current.requestsInFlight;
  }

  /** True while a reload runs or is scheduled. */
  get busy(): boolean {
    return this.running !== undefined || this.queued !== undefined;
  }

  private start(): Promise<void> {
    const tracked: Promise<void> = this.loadAndSwap().then(
      () => {
        this.reloadFailedAt = undefined;
      },
      (error: unknown) => {
        this.reloadFailedAt = new Date();
        throw error;
      },
    ).finally(() => {
      if (this.running === tracked) this.running = undefined;
    });
    this.running = tracked;
    return tracked;
  }

  private async loadAndSwap(): Promise<void> {
    // A new load lets the version kept from the reload before go: two datasets at most, the one served and the one loading.
    this.releaseKept();
    const next = await this.load(this.current.dir, this.options);
    const previous = this.current;
    this.current = next;
    this.generation++;
    const graceMs = (this.options.versionGraceSeconds ?? DEFAULT_VERSION_GRACE_SECONDS) * 1000;
    if (graceMs > 0 && previous.version !== next.version) {
      const timer = setTimeout(() => this.releaseKept(), graceMs);
      // The grace period never keeps the process alive on its own.
      timer.unref();
      this.kept = { dataset: previous, timer };
    } else {
      this.retire(previous);
    }
  }

  /** Ends the grace period of the version kept, if any: it closes once its requests finish. */
  private releaseKept(): void {
    const kept = this.kept;
    if (!kept) return;
    this.kept = undefined;
    clearTimeout(kept.timer);
    this.retire(kept.dataset);
  }

  /** The data closes once its requests finish; the next reload need not wait for that. */
  private retire(dataset: ServedDataset): void {
    const retired: Promise<void> = dataset
      .retire()
      .catch(() => undefined)
      .finally(() => this.retiring.delete(retired));
    this.retiring.add(retired);
  }

  async close(): Promise<void> {
    while (this.running || this.queued) await (this.queued ?? this.running)!.catch(() => undefined);
    this.releaseKept();
    await Promise.all([...this.retiring]);
    await this.current.retire();
  }
}
