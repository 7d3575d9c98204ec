/**
 * A dataset served to several plugins: attribution computed once per plugin at
 * load time, each request on its own DuckDB connection.
 */
import { LocalBackend, openDataset } from '../local/backend.js';
import type { Dataset } from '../local/dataset.js';
import { listPlugins, Scope } from '../local/engine.js';

/** The plugin id under which a dataset without plugin_id is served. */
export const SINGLE_TENANT_ID = 'default';

export interface ServeOptions {
  referenceCurrency?: string;
}

export class ServedDataset {
  private inFlight = 0;
  private retired = false;
  private drained?: () => void;

  private constructor(
    readonly dir: string,
    private readonly dataset: Dataset,
    private readonly scopes: Map<string, Scope>,
    readonly loadedAt: Date,
  ) {}

  static async load(dir: string, options: ServeOptions = {}): Promise<ServedDataset> {
    const dataset = await openDataset(dir);
    try {
      const plugins = await listPlugins(dataset);
      const scopes = new Map<string, Scope>();
      const ids = plugins.length ? plugins : [SINGLE_TENANT_ID];
      for (const [i, id] of ids.entries()) {
        scopes.set(id, await Scope.build(dataset, `scope_${i}`, plugins.length ? id : null, options));
      }
      return new ServedDataset(dir, dataset, scopes, new Date());
    } catch (error) {
      dataset.db.close();
      throw error;
    }
  }

  get plugins(): string[] {
    return [...this.scopes.keys()];
  }

  has(plugin: string): boolean {
    return this.scopes.has(plugin);
  }

  /** A backend scoped to one plugin on a connection of its own; close() it when the request ends. */
  async backend(plugin: string): Promise<LocalBackend> {
    const scope = this.scopes.get(plugin);
    if (!scope) throw new Error(`plugin ${plugin} is not served`);
    this.inFlight++;
    try {
      return new LocalBackend(scope, await scope.db.connect(), () => this.release());
    } catch (error) {
      this.release();
      throw error;
    }
  }

  private release(): void {
    this.inFlight--;
    if (this.retired && this.inFlight === 0) this.drained?.();
  }

  /** Closes the database once the requests still using it have finished. */
  async retire(): Promise<void> {
    this.retired = true;
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    this.dataset.db.close();
  }
}

/** The dataset being served now; reload() swaps in a fresh one without dropping requests in flight. */
export class DatasetHolder {
  private reloading?: Promise<void>;

  constructor(
    public current: ServedDataset,
    private readonly options: ServeOptions,
  ) {}

  async reload(): Promise<void> {
    this.reloading ??= (async () => {
      try {
        const next = await ServedDataset.load(this.current.dir, this.options);
        const previous = this.current;
        this.current = next;
        await previous.retire();
      } finally {
        this.reloading = undefined;
      }
    })();
    return this.reloading;
  }

  async close(): Promise<void> {
    await this.reloading?.catch(() => undefined);
    await this.current.retire();
  }
}
