/**
 * A directory of plugin files (`convx data import DIR --split-plugins --into OUTDIR/`), served
 * lazily: OUTDIR/<plugin>.duckdb is opened on its plugin's first request, as a ServedDataset of
 * its own (plugins.ts), and at most maxOpen files are open at once: opening one more closes the
 * least recently used that no request holds. A reload lists the directory again: a new file is
 * served from its first request, a removed one's plugin is unknown (in-flight requests finish
 * on it), a changed one is opened afresh on its next request while the data it replaced still
 * answers requests pinned to its version for the grace period. Each file's data version is the
 * one local mode gives that file (local/open.ts dataVersion). With a memory budget (maxMemoryBytes),
 * each file's DuckDB gets it as its memory_limit (at least MIN_FILE_MEMORY_LIMIT), and once the open
 * files' DuckDB memory adds up to more, the least recently used that no request holds are closed
 * (never the last one open).
 */
import { pathWord } from '../words.js';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { DataError, readFailure } from '../errors.js';
import { SAFE_PLUGIN_ID } from '../model/plugin-id.js';
import { discoverTables, unreadableFile } from '../local/dataset/discover.js';
import { isDuckDbFile } from '../local/imported.js';
import { dataVersion, filesIdentity } from '../local/open.js';
import { DEFAULT_VERSION_GRACE_SECONDS, RETRY_AFTER_UNAVAILABLE_SECONDS } from './limits.js';
import { retryLater } from './problem.js';
import { ServedDataset, type Held, type ServedData, type ServedSummary, type ServeOptions } from './plugins.js';
import { defaultPoolSize } from './pool.js';

/** Plugin files open at once when --max-open-plugins is not given. */
export const DEFAULT_MAX_OPEN_PLUGINS = 16;

/**
 * The least memory_limit a file's DuckDB gets under a memory budget: the room a query needs to
 * run at all (a report on a file of a few hundred orders failed with 16 MiB and ran with 24 MiB).
 */
export const MIN_FILE_MEMORY_LIMIT = 64 * 1024 ** 2;

const SUFFIX = '.duckdb';

/** A plugin's file as the last listing found it. */
interface Listed {
  file: string;
  /** The data version of the file as listed (its size, modification time and inode). */
  version: string;
}

/** A plugin file opened (or being opened), with what the LRU needs. */
interface Entry {
  opening: Promise<ServedDataset>;
  dataset?: ServedDataset;
  /** Requests waiting for the opening: such an entry is never closed. */
  waiting: number;
  lastUsed: number;
  /** Its memory in bytes when last measured (ServedDataset.memoryUsage, with a memory budget: after its opening and after each request). */
  memory?: number;
}

/** What the files' opening and closing is (a test's window on laziness and the LRU). */
export interface PluginFileStats {
  /** The plugins whose file is open or being opened, least recently used first. */
  open: string[];
  /** Files opened and closed (evicted, or replaced by a reload) since the start. */
  opened: number;
  closed: number;
}

/**
 * Every `<plugin>.duckdb` of dir, by name, with why it is not a plugin's file that `serve` serves
 * (an id that cannot name a file, a file that is not DuckDB's); `data shards` plans from the same
 * list, so that it never routes a plugin to a shard that skips its file.
 */
export function pluginFileEntries(dir: string, name = dir): { plugin: string; file: string; problem?: string }[] {
  return namesIn(dir, name)
    .filter((name) => name.endsWith(SUFFIX))
    .sort()
    .map((name) => {
      const plugin = name.slice(0, -SUFFIX.length);
      const file = join(dir, name);
      if (!SAFE_PLUGIN_ID.test(plugin)) return { plugin, file, problem: 'is not a plugin id convx writes a file for' };
      if (!isDuckDbFile(file)) {
        const denied = unreadableFile(file);
        return { plugin, file, problem: denied ? `cannot be read (${denied}; convx serve skips it)` : 'is not a DuckDB file (convx serve skips it)' };
      }
      return { plugin, file };
    });
}

/** The names in a plugin directory; one that cannot be read is a DataError saying why in words (naming it by name). */
function namesIn(dir: string, name: string): string[] {
  try {
    return readdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'is gone (no such directory)' : code === 'ENOTDIR' ? 'is not a directory' : `cannot be read (${readFailure(error)})`;
    throw new DataError(`the plugin directory ${name} ${why}`);
  }
}

/**
 * The plugin files of a directory, by plugin id: files whose name is a safe plugin id and .duckdb,
 * and which are DuckDB files; the other `.duckdb` files, with why, are skipped.
 */
function listFiles(dir: string, options: ServeOptions): { listed: Map<string, Listed>; skipped: { file: string; problem: string }[] } {
  const listed = new Map<string, Listed>();
  const skipped: { file: string; problem: string }[] = [];
  for (const { plugin, file, problem } of pluginFileEntries(dir, options.name ?? dir)) {
    if (problem === undefined) listed.set(plugin, { file, version: dataVersion(filesIdentity(file), options) });
    else skipped.push({ file, problem });
  }
  return { listed, skipped };
}

/**
 * True for a directory that holds plugin files (name.duckdb, DuckDB files) and no dataset
 * table at its top (orders.csv, touches.parquet ...): `convx serve --data` serves it lazily. One
 * whose `.duckdb` files are all skipped, without a dataset table, is a DataError that names each
 * with why (else it would be read as a dataset with nothing to serve).
 */
export function isPluginDirectory(dir: string, name = dir): boolean {
  let files: ReturnType<typeof listFiles>;
  try {
    if (!statSync(dir).isDirectory()) return false;
    files = listFiles(dir, {});
    if (files.listed.size === 0 && files.skipped.length === 0) return false;
    if (discoverTables(dir).size > 0) return false;
  } catch {
    // A directory whose tables cannot be told: a dataset's, whose load says why.
    return false;
  }
  if (files.listed.size > 0) return true;
  throw new DataError(
    `the directory ${name} holds no dataset table and no .duckdb file convx serves:`,
    [...files.skipped.map(({ file, problem }) => `${basename(file)} ${problem}`), `(convx data import DATASET --split-plugins --into ${pathWord(name)} writes one file per plugin)`],
  );
}

export interface PluginFilesOptions extends ServeOptions {
  /** Files open at once (DEFAULT_MAX_OPEN_PLUGINS when left out). */
  maxOpen?: number;
  /**
   * The open files' DuckDB memory, in bytes, all together (no bound when left out): each file's
   * memory_limit (at least MIN_FILE_MEMORY_LIMIT), and past it the least recently used files no
   * request holds are closed.
   */
  maxMemoryBytes?: number;
  /** One JSON object per line: a file opened or closed. */
  log?: (entry: Record<string, unknown>) => void;
  /** How a file is loaded (a test may wrap it). */
  load?: (file: string, options: ServeOptions) => Promise<ServedDataset>;
}

export class PluginFiles implements ServedData {
  private listing: Map<string, Listed>;
  private readonly entries = new Map<string, Entry>();
  /** Data a reload replaced (a changed file's), answerable to requests pinned to its version until its timer fires. */
  private readonly kept = new Map<string, { dataset: ServedDataset; timer: NodeJS.Timeout }>();
  private readonly closing = new Set<Promise<void>>();
  private tick = 0;
  private counts = { opened: 0, closed: 0 };
  /** The plugins whose file's memory is to be measured, and the measuring running now (one at a time). */
  private readonly unmeasured = new Set<string>();
  private measuring?: Promise<void>;
  readonly poolSize: number;
  readonly maxOpen: number;
  loadedAt = new Date();
  /** When the latest reload failed (the files listed before still served); undefined once one succeeds. */
  reloadFailedAt?: Date;
  /** How many listings have been made (the first one included). */
  generation = 1;

  constructor(
    readonly dir: string,
    private readonly options: PluginFilesOptions = {},
  ) {
    this.poolSize = options.poolSize ?? defaultPoolSize();
    this.maxOpen = options.maxOpen ?? DEFAULT_MAX_OPEN_PLUGINS;
    if (!Number.isInteger(this.maxOpen) || this.maxOpen < 1) throw new Error(`internal: at least one plugin file must be open at once, not ${this.maxOpen}`);
    this.listing = this.list();
  }

  /** The directory's plugin files, each `.duckdb` file skipped logged with why; none at all is a DataError. */
  private list(): Map<string, Listed> {
    const { listed, skipped } = listFiles(this.dir, this.options);
    for (const { file, problem } of skipped) this.log({ msg: 'skipped a file of the plugin directory', file, reason: `${basename(file)} ${problem}` });
    if (listed.size === 0) throw new DataError(`${this.options.name ?? this.dir} holds no plugin files (<plugin>.duckdb, written by convx data import --split-plugins)`);
    return listed;
  }

  get plugins(): string[] {
    return [...this.listing.keys()];
  }

  has(plugin: string): boolean {
    return this.listing.has(plugin);
  }

  /**
   * An open file's version, else the version its file has now (a stat and its header read, not an
   * opening): the one its opening would give, so that a 304 needs no opening (hooks/conditional.ts).
   */
  versionOf(plugin: string): string | undefined {
    const open = this.entries.get(plugin)?.dataset?.version;
    if (open !== undefined) return open;
    const listed = this.listing.get(plugin);
    if (!listed) return undefined;
    try {
      return dataVersion(filesIdentity(listed.file), this.options);
    } catch {
      // A file gone since the listing: no data to be answered from.
      return undefined;
    }
  }

  /** Never busy: a reload only lists the directory. */
  readonly busy = false;

  get stats(): PluginFileStats {
    const open = [...this.entries].sort((a, b) => a[1].lastUsed - b[1].lastUsed).map(([plugin]) => plugin);
    return { open, ...this.counts };
  }

  /** Requests holding an open file's data. */
  get requestsInFlight(): number {
    let n = 0;
    for (const entry of this.entries.values()) n += (entry.dataset?.requestsInFlight ?? 0) + entry.waiting;
    return n;
  }

  summary(): ServedSummary {
    const budget = this.options.maxMemoryBytes;
    return { plugins: this.plugins, poolSize: this.poolSize, maxOpenPlugins: this.maxOpen, ...(budget !== undefined ? { maxPluginMemory: budget } : {}), reports: true };
  }

  /** The open files' DuckDB memory in bytes as last measured, by plugin (measured only with a memory budget). */
  get memory(): Map<string, number> {
    return new Map([...this.entries].flatMap(([plugin, entry]) => (entry.memory === undefined ? [] : [[plugin, entry.memory] as const])));
  }

  /** Resolves once the memory measured so far is measured and the files past the budget are closed. */
  async memorySettled(): Promise<void> {
    while (this.measuring) await this.measuring;
  }

  async hold(plugin: string, version?: string): Promise<Held | undefined> {
    const kept = this.kept.get(plugin)?.dataset;
    if (version !== undefined && kept?.version === version) return { dataset: kept, release: kept.retain() };
    const listed = this.listing.get(plugin);
    if (!listed) return undefined;
    // A pinned version the file does not have now (versionOf: the one its opening would give) is not worth opening it for.
    if (version !== undefined && !this.entries.has(plugin) && this.versionOf(plugin) !== version) return undefined;
    // A file gone since the listing (moved away, no reload yet) is a plugin without data, as a reload would make it, not a failure to open.
    if (!this.entries.has(plugin) && !existsSync(listed.file)) return undefined;
    const entry = this.entries.get(plugin) ?? this.open(plugin, listed);
    entry.lastUsed = ++this.tick;
    entry.waiting++;
    let dataset: ServedDataset;
    try {
      dataset = await entry.opening;
    } finally {
      entry.waiting--;
    }
    if (version !== undefined && dataset.version !== version) {
      this.trim();
      return undefined;
    }
    // Retained in the same turn as the opening ends: no eviction can come between.
    const release = dataset.retain();
    return {
      dataset,
      release: () => {
        release();
        this.trim();
        this.measure(plugin);
      },
    };
  }

  /**
   * Opens a plugin's file (ServedDataset.load on it), checked to hold that plugin and only it. A
   * failure is logged with its reason and answered 503 plugin-unavailable (no reason: the file's
   * path and its plugins are no business of the caller's; its operator replaces the file and
   * reloads), and forgotten, so the next request tries again.
   */
  private open(plugin: string, listed: Listed): Entry {
    const began = Date.now();
    const load = this.options.load ?? ((file, o) => ServedDataset.load(file, o));
    const budget = this.options.maxMemoryBytes;
    const loaded = (async () => {
      const dataset = await load(listed.file, budget !== undefined ? { ...this.options, memoryLimitBytes: Math.max(budget, MIN_FILE_MEMORY_LIMIT) } : this.options);
      const plugins = dataset.plugins;
      if (plugins.length !== 1 || plugins[0] !== plugin) {
        void dataset.retire();
        throw new Error(`${listed.file} holds plugin ${plugins.join(', ')}, not ${plugin}: a plugin file holds the plugin it is named after, and only it`);
      }
      return dataset;
    })();
    const entry: Entry = { opening: loaded, waiting: 0, lastUsed: ++this.tick };
    entry.opening = loaded.then(
      (dataset) => {
        entry.dataset = dataset;
        this.counts.opened++;
        this.log({ msg: 'opened a plugin file', plugin, dataVersion: dataset.version, ms: Date.now() - began });
        this.trim();
        this.measure(plugin);
        return dataset;
      },
      (error: unknown) => {
        if (this.entries.get(plugin) === entry) this.entries.delete(plugin);
        this.log({ msg: 'cannot open a plugin file', plugin, error: error instanceof Error ? error.message : String(error) });
        throw retryLater('pluginUnavailable', `the data of plugin ${plugin} cannot be opened on this server now; its operator has the reason in the server's log`, RETRY_AFTER_UNAVAILABLE_SECONDS);
      },
    );
    this.entries.set(plugin, entry);
    return entry;
  }

  /** Closes the least recently used files no request holds while more than maxOpen are open. */
  private trim(): void {
    while (this.entries.size > this.maxOpen) {
      const victim = this.leastRecentlyUsed();
      if (!victim) return;
      this.evict(victim, { msg: 'closed a plugin file (least recently used)', plugin: victim[0] });
    }
  }

  /** The open file least recently used that no request holds or waits for, if any. */
  private leastRecentlyUsed(): [string, Entry] | undefined {
    let victim: [string, Entry] | undefined;
    for (const item of this.entries) {
      const [, entry] = item;
      if (!entry.dataset || entry.waiting > 0 || entry.dataset.requestsInFlight > 0) continue;
      if (!victim || entry.lastUsed < victim[1].lastUsed) victim = item;
    }
    return victim;
  }

  /** Closes an open file (it is no longer served; its data closes once its requests end), with a line of the log. */
  private evict([plugin, entry]: [string, Entry], line: Record<string, unknown>): void {
    this.entries.delete(plugin);
    this.log(line);
    this.retire(entry.dataset!);
  }

  /**
   * With a memory budget: measures the plugin's file (after its opening or a request on it) in
   * the background, one measuring at a time, then closes the least recently used files no request
   * holds while the open files' memory adds up to more than the budget, keeping at least one open.
   */
  private measure(plugin: string): void {
    if (this.options.maxMemoryBytes === undefined) return;
    this.unmeasured.add(plugin);
    if (this.measuring) return;
    const run: Promise<void> = (async () => {
      while (this.unmeasured.size) {
        const [next] = this.unmeasured;
        this.unmeasured.delete(next!);
        const entry = this.entries.get(next!);
        // Only a file open now: one closed meanwhile is neither measured nor counted.
        if (!entry?.dataset) continue;
        entry.memory = await entry.dataset.memoryUsage().catch(() => entry.memory);
        this.trimMemory();
      }
    })().finally(() => {
      if (this.measuring === run) this.measuring = undefined;
    });
    this.measuring = run;
  }

  /** Closes the least recently used files no request holds while the open files' measured memory exceeds the budget. */
  private trimMemory(): void {
    const budget = this.options.maxMemoryBytes!;
    const total = () => [...this.entries.values()].reduce((sum, entry) => sum + (entry.memory ?? 0), 0);
    while (this.entries.size > 1 && total() > budget) {
      const victim = this.leastRecentlyUsed();
      if (!victim) return;
      const memoryBytes = total();
      this.evict(victim, { msg: 'closed a plugin file (memory)', plugin: victim[0], memoryBytes, maxPluginMemory: budget });
    }
  }

  /**
   * Lists the directory again: new files are served from their first request, removed ones'
   * plugins are unknown, a changed file is opened afresh on its next request (the data it
   * replaced stays answerable to requests pinned to its version for the grace period).
   */
  async reload(): Promise<void> {
    let next: Map<string, Listed>;
    try {
      // As at the start: a directory without plugin files serves nothing, so the files listed before stay served.
      next = this.list();
    } catch (error) {
      this.reloadFailedAt = new Date();
      throw error;
    }
    this.reloadFailedAt = undefined;
    for (const plugin of [...this.kept.keys()]) this.releaseKept(plugin);
    for (const [plugin, entry] of [...this.entries]) {
      const listed = next.get(plugin);
      const version = entry.dataset?.version ?? this.listing.get(plugin)?.version;
      if (listed && listed.version === version) continue;
      this.entries.delete(plugin);
      entry.opening.then(
        (dataset) => this.replaced(plugin, dataset, listed !== undefined),
        () => undefined,
      );
    }
    this.listing = next;
    this.loadedAt = new Date();
    this.generation++;
  }

  /** The data of a file a reload changed or removed: kept for pinned requests (a changed file's), then closed once its requests end. */
  private replaced(plugin: string, dataset: ServedDataset, changed: boolean): void {
    const graceMs = (this.options.versionGraceSeconds ?? DEFAULT_VERSION_GRACE_SECONDS) * 1000;
    if (!changed || graceMs <= 0) return this.retire(dataset);
    const timer = setTimeout(() => this.releaseKept(plugin), graceMs);
    timer.unref();
    this.kept.set(plugin, { dataset, timer });
  }

  private releaseKept(plugin: string): void {
    const kept = this.kept.get(plugin);
    if (!kept) return;
    this.kept.delete(plugin);
    clearTimeout(kept.timer);
    this.retire(kept.dataset);
  }

  /** Closes a file's data once its requests end. */
  private retire(dataset: ServedDataset): void {
    this.counts.closed++;
    const closed: Promise<void> = dataset
      .retire()
      .catch(() => undefined)
      .finally(() => this.closing.delete(closed));
    this.closing.add(closed);
  }

  private log(entry: Record<string, unknown>): void {
    this.options.log?.({ time: new Date().toISOString(), ...entry });
  }

  /** Closes every file once its requests end. */
  async close(): Promise<void> {
    await this.memorySettled();
    for (const plugin of [...this.kept.keys()]) this.releaseKept(plugin);
    const entries = [...this.entries.values()];
    this.entries.clear();
    for (const entry of entries) {
      const dataset = await entry.opening.catch(() => undefined);
      if (dataset) this.retire(dataset);
    }
    await Promise.all([...this.closing]);
  }
}
