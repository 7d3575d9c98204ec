/**
 * A small pool of DuckDB connections to one database, lent to requests and
 * reused, instead of a connection opened and closed per request. At most
 * `size` connections exist; a request beyond that waits for one, first come
 * first served, and leaves the queue when its time budget runs out (db.ts
 * withQueryBudget). A connection whose request failed or was interrupted is
 * closed and replaced, never lent again.
 *
 * Which request may ask for a connection at all is the FairGate's call (below):
 * a bound per plugin and per token, and round-robin between plugins, so that
 * the pool's own queue stays empty.
 */
import { availableParallelism } from 'node:os';
import { currentBudget, QueryTimeoutError, type Database } from '../local/db.js';

/**
 * Connections per served dataset when not told: four per core. A request holds
 * its connection while Node does its share of the work between queries (and
 * the few-ms queries run one thread each), so fewer connections than that
 * leave cores idle: measured on 2 cores, 2 connections served 77 reports/s,
 * 8 served 104 and 16 served 107.
 */
export function defaultPoolSize(): number {
  return 4 * Math.max(1, availableParallelism());
}

/** A connection lent to one request: close() gives it back (once); interrupt() marks it for replacement. */
export interface Lease {
  /** What the request queries on: the pooled connection, whose close() returns it to the pool. */
  db: Database;
  /** Gives the connection back; when it failed or was interrupted, it is closed and a fresh one takes its place. */
  release(): void;
  /** Marks the connection unfit for reuse (its request failed). */
  discard(): void;
}

export interface PoolStats {
  size: number;
  /** Connections open now, lent or idle. */
  open: number;
  idle: number;
  lent: number;
  /** Requests waiting for a connection. */
  waiting: number;
  /** Connections opened since the pool was made, replacements included. */
  opened: number;
  /** Connections closed because their request failed or was interrupted. */
  replaced: number;
  /** Leases given out so far. */
  leases: number;
}

interface Waiter {
  resolve: (db: Database) => void;
  reject: (error: unknown) => void;
}

/**
 * Waits for a promise-maker's answer within the time budget of the work running now:
 * when the budget runs out first, leave() takes the waiter out of its queue and the
 * wait fails with QueryTimeoutError (queued: its query never ran).
 */
function withinBudget<T>(enqueue: (resolve: (value: T) => void, reject: (error: unknown) => void) => void, leave: () => boolean): Promise<T> {
  const budget = currentBudget();
  if (budget && budget.deadline <= performance.now()) return Promise.reject(new QueryTimeoutError(budget.budgetMs, true));
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    enqueue(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
    if (budget) {
      timer = setTimeout(() => {
        if (leave()) reject(new QueryTimeoutError(budget.budgetMs, true));
      }, budget.deadline - performance.now());
    }
  });
}

export class ConnectionPool {
  private readonly idle: Database[] = [];
  private readonly waiters: Waiter[] = [];
  /** Connections closed whose interrupted query still runs (see closeOne). */
  private readonly ending = new Set<Promise<void>>();
  /** Connections open or being opened (lent ones included). */
  private count = 0;
  private lentCount = 0;
  private closed = false;
  private opened = 0;
  private replaced = 0;
  private leases = 0;

  constructor(
    /** Opens one more connection to the database (Database.connect). */
    private readonly open: () => Promise<Database>,
    readonly size: number = defaultPoolSize(),
  ) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`internal: a connection pool needs a whole size of at least 1, not ${size}`);
  }

  get stats(): PoolStats {
    return {
      size: this.size,
      open: this.count,
      idle: this.idle.length,
      lent: this.lentCount,
      waiting: this.waiters.length,
      opened: this.opened,
      replaced: this.replaced,
      leases: this.leases,
    };
  }

  /** Lends a connection: an idle one, a new one while fewer than size exist, else the next one given back. */
  async acquire(): Promise<Lease> {
    if (this.closed) throw new Error('internal: the connection pool is closed');
    const db = this.idle.pop() ?? (this.count < this.size ? await this.openOne() : await this.waitForOne());
    this.lentCount++;
    this.leases++;
    return this.lend(db);
  }

  /** Closes the idle connections now and each lent one when it is given back. */
  close(): void {
    this.closed = true;
    for (const db of this.idle.splice(0)) this.closeOne(db);
    for (const waiter of this.waiters.splice(0)) waiter.reject(new Error('internal: the connection pool was closed while a request waited'));
  }

  private async openOne(): Promise<Database> {
    this.count++;
    try {
      const db = await this.open();
      this.opened++;
      return db;
    } catch (error) {
      this.count--;
      // A request waiting for a connection must not wait for one that will never come.
      this.openForWaiter();
      throw error;
    }
  }

  /** Opens a connection for the first waiter, when there is room for one more. */
  private openForWaiter(): void {
    if (this.closed || this.count >= this.size) return;
    const waiter = this.waiters.shift();
    if (waiter) this.openOne().then(waiter.resolve, waiter.reject);
  }

  private waitForOne(): Promise<Database> {
    let waiter: Waiter | undefined;
    return withinBudget<Database>(
      (resolve, reject) => this.waiters.push((waiter = { resolve, reject })),
      () => {
        const at = this.waiters.indexOf(waiter!);
        if (at < 0) return false;
        this.waiters.splice(at, 1);
        return true;
      },
    );
  }

  /**
   * Closes a connection. One whose interrupted query still runs (its request already has its
   * 503) keeps its place in the count until that query ends: no replacement opens beside it,
   * so never more than `size` queries run, and settled() waits for it.
   */
  private closeOne(db: Database): void {
    try {
      db.close();
    } catch {
      // closing a broken connection may fail; it is gone either way
    }
    const ending = db.settled().finally(() => {
      this.ending.delete(ending);
      this.count--;
      this.openForWaiter();
    });
    this.ending.add(ending);
  }

  /** Resolves once the connections closed so far have ended (their interrupted queries included). */
  async settled(): Promise<void> {
    while (this.ending.size) await Promise.allSettled([...this.ending]);
  }

  /**
   * The lent connection as a Database whose close() gives it back and whose
   * interrupt() marks it for replacement: an object over the pooled one (its
   * methods and connection are inherited), so the backend code stays the same.
   */
  private lend(db: Database): Lease {
    let unfit = false;
    let given = false;
    const lent = Object.create(db) as Database;
    lent.interrupt = () => {
      unfit = true;
      db.interrupt();
    };
    const release = () => {
      if (given) return;
      given = true;
      this.lentCount--;
      this.giveBack(db, unfit);
    };
    lent.close = release;
    return { db: lent, release, discard: () => (unfit = true) };
  }

  private giveBack(db: Database, unfit: boolean): void {
    if (unfit || this.closed) {
      if (unfit) this.replaced++;
      this.closeOne(db);
      // The waiter that would have had this connection gets a fresh one.
      this.openForWaiter();
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(db);
    else this.idle.push(db);
  }
}

/** Whose work asks for a turn: the token's plugin and the token. */
export interface Claim {
  plugin: string;
  /** The token, as an opaque digest (ratelimit.ts rateKey), never the token itself. */
  client: string;
  /** True when the work takes a connection of the pool; false for work on a connection of its own (a validation). */
  pooled: boolean;
}

/** The FairGate's bounds (the README's `convx serve` limits). */
export interface GateLimits {
  /** Pooled work at once, every plugin together: the pool's size, so that the pool's own queue stays empty. */
  poolSize: number;
  /** Work of one plugin at once (`--plugin-concurrency`). */
  perPlugin: number;
  /** Work of one token at once (`--token-concurrency`). */
  perClient: number;
  /** Requests of one plugin waiting for a turn (`--plugin-queue`); one more is refused at once with a BusyError. */
  queuePerPlugin: number;
}

/** Work of one plugin at once when not told: half the pool (rounded up), so another plugin always finds room. */
export function defaultPluginConcurrency(poolSize: number): number {
  return Math.max(1, Math.ceil(poolSize / 2));
}

/** Requests of one plugin that may wait for a turn when not told: eight per pooled connection, at least 64. */
export function defaultPluginQueue(poolSize: number): number {
  return Math.max(64, 8 * poolSize);
}

/** Seconds a client refused because its plugin's queue is full is asked to wait. */
export const RETRY_AFTER_BUSY_SECONDS = 2;

/** The server has no room for the request now (its plugin's queue is full): a 503 busy problem with Retry-After. */
export class BusyError extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds = RETRY_AFTER_BUSY_SECONDS,
  ) {
    super(message);
    this.name = 'BusyError';
  }
}

/** A turn given by the gate: leave() when the work is done (once; later calls do nothing). */
export interface Ticket {
  leave(): void;
}

export interface PluginTurns {
  running: number;
  waiting: number;
  /** The most of this plugin's work that ran at once so far. */
  peak: number;
  /** Turns given so far. */
  admitted: number;
}

export interface GateStats {
  running: number;
  /** Of those, on pooled connections. */
  pooled: number;
  waiting: number;
  admitted: number;
  /** Refused at once: the plugin's queue was full. */
  refused: number;
  /** Left the queue when their time budget ran out, before they ran. */
  expired: number;
  /** The most work of one token that ran at once so far. */
  clientPeak: number;
  /** Left the queue because their client went away, before they ran. */
  abandoned: number;
  /** Per plugin that asked for a turn so far (the plugins a server serves: a bounded list). */
  plugins: Record<string, PluginTurns>;
}

interface GateWaiter {
  claim: Claim;
  granted: boolean;
  resolve?: () => void;
  /** Takes the waiter out of its queue with this error (the drain). */
  refuse?: (error: unknown) => void;
}

/** The client of a request waiting for its turn went away: nothing is left to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('the client went away while its request waited for its turn');
    this.name = 'ClientGoneError';
  }
}

interface PluginState extends PluginTurns {
  /** Waiters per token, the tokens in round-robin order (a served token goes to the back). */
  queues: Map<string, GateWaiter[]>;
}

/**
 * Who may run work on the data now. Each plugin runs at most perPlugin requests
 * at once and each token at most perClient; pooled work at most poolSize in all.
 * Requests beyond that wait in a queue per plugin (per token inside it), and
 * the turns go round-robin between the plugins that have waiters, then between
 * their tokens: 32 requests of one plugin never queue ahead of another
 * plugin's. A plugin with queuePerPlugin requests waiting gets a BusyError for
 * one more; a waiter whose time budget runs out leaves the queue without
 * running (QueryTimeoutError). One gate serves every dataset a server loads
 * (a reload keeps the bounds).
 */
export class FairGate {
  /** Plugins that asked for a turn so far, in round-robin order: a served plugin goes to the back. */
  private readonly plugins = new Map<string, PluginState>();
  private readonly clients = new Map<string, number>();
  private running = 0;
  private pooled = 0;
  private admitted = 0;
  private refused = 0;
  private expired = 0;
  private clientPeak = 0;
  private abandoned = 0;
  /** Set when the server drains: every waiter and every later request is refused with its error. */
  private refusal?: () => Error;

  constructor(readonly limits: GateLimits) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isInteger(value) || value < 1) throw new Error(`internal: the gate's ${name} must be a whole number of at least 1, not ${value}`);
    }
  }

  get stats(): GateStats {
    const plugins: Record<string, PluginTurns> = {};
    for (const [plugin, { running, waiting, peak, admitted }] of this.plugins) plugins[plugin] = { running, waiting, peak, admitted };
    const waiting = Object.values(plugins).reduce((sum, p) => sum + p.waiting, 0);
    const { running, pooled, admitted, refused, expired, clientPeak, abandoned } = this;
    return { running, pooled, waiting, admitted, refused, expired, clientPeak, abandoned, plugins };
  }

  /**
   * A turn for the claim's work: at once when its plugin, its token and (for pooled work) the
   * pool have room, else after waiting in its plugin's queue. Throws BusyError when that queue is
   * full, QueryTimeoutError (queued) when the time budget of the work running now (db.ts
   * withQueryBudget) runs out first.
   */
  async enter(claim: Claim, signal?: AbortSignal): Promise<Ticket> {
    if (this.refusal) throw this.refusal();
    if (signal?.aborted) {
      this.abandoned++;
      throw new ClientGoneError();
    }
    const budget = currentBudget();
    if (budget && budget.deadline <= performance.now()) {
      this.expired++;
      throw new QueryTimeoutError(budget.budgetMs, true);
    }
    const state = this.stateOf(claim.plugin);
    const waiter: GateWaiter = { claim, granted: false };
    const queue = state.queues.get(claim.client);
    if (queue) queue.push(waiter);
    else state.queues.set(claim.client, [waiter]);
    state.waiting++;
    this.dispatch();
    if (!waiter.granted) {
      if (state.waiting > this.limits.queuePerPlugin) {
        // The queue is full: the token holding the most waiters gives one up (its newest), so one
        // token cannot fill its plugin's queue for the others; the newcomer when it is that token.
        const mine = state.queues.get(claim.client)?.length ?? 0;
        const [most, theirs] = [...state.queues].reduce((a, b) => (b[1].length > a[1].length ? b : a));
        const busy = () =>
          new BusyError(
            `this plugin has ${this.limits.queuePerPlugin} requests waiting for their turn already (at most ${this.limits.perPlugin} run at once); ` +
              `try again in ${RETRY_AFTER_BUSY_SECONDS} s`,
          );
        this.refused++;
        if (most === claim.client || theirs.length <= mine) {
          this.remove(state, waiter);
          throw busy();
        }
        theirs[theirs.length - 1]!.refuse?.(busy());
      }
      await new Promise<void>((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined;
        const onAbort = () => leave(() => this.abandoned++, new ClientGoneError());
        const leave = (count: () => void, error: unknown) => {
          if (waiter.granted) return;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          this.remove(state, waiter);
          count();
          reject(error);
        };
        waiter.resolve = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        waiter.refuse = (error) => leave(() => undefined, error);
        signal?.addEventListener('abort', onAbort, { once: true });
        if (budget) {
          timer = setTimeout(() => leave(() => this.expired++, new QueryTimeoutError(budget.budgetMs, true)), budget.deadline - performance.now());
        }
      });
    }
    let left = false;
    return {
      leave: () => {
        if (left) return;
        left = true;
        this.release(claim);
      },
    };
  }

  /** The drain: every request waiting for a turn, and every one that asks later, gets the error instead of running. */
  refuseWaiting(error: () => Error): void {
    this.refusal = error;
    for (const state of this.plugins.values()) {
      for (const queue of [...state.queues.values()]) for (const waiter of [...queue]) waiter.refuse?.(error());
    }
  }

  private stateOf(plugin: string): PluginState {
    let state = this.plugins.get(plugin);
    if (!state) {
      state = { running: 0, waiting: 0, peak: 0, admitted: 0, queues: new Map() };
      this.plugins.set(plugin, state);
    }
    return state;
  }

  private clientKey(claim: Claim): string {
    return `${claim.plugin}\u0000${claim.client}`;
  }

  /** Takes a waiter that never got its turn out of its queue. */
  private remove(state: PluginState, waiter: GateWaiter): void {
    const queue = state.queues.get(waiter.claim.client);
    const at = queue?.indexOf(waiter) ?? -1;
    if (at < 0) return;
    queue!.splice(at, 1);
    if (!queue!.length) state.queues.delete(waiter.claim.client);
    state.waiting--;
  }

  private release(claim: Claim): void {
    const state = this.plugins.get(claim.plugin)!;
    state.running--;
    this.running--;
    if (claim.pooled) this.pooled--;
    const key = this.clientKey(claim);
    const running = (this.clients.get(key) ?? 1) - 1;
    if (running > 0) this.clients.set(key, running);
    else this.clients.delete(key);
    this.dispatch();
  }

  /** Gives turns while some plugin's waiter may run: plugins round-robin, then tokens round-robin within one. */
  private dispatch(): void {
    for (;;) {
      let served: [string, PluginState, GateWaiter] | undefined;
      for (const [plugin, state] of this.plugins) {
        if (!state.waiting || state.running >= this.limits.perPlugin) continue;
        const waiter = this.pick(state);
        if (waiter) {
          served = [plugin, state, waiter];
          break;
        }
      }
      if (!served) return;
      const [plugin, state, waiter] = served;
      // The plugin served goes to the back of the round.
      this.plugins.delete(plugin);
      this.plugins.set(plugin, state);
      this.grant(state, waiter);
    }
  }

  /** The first waiter of the plugin that may run now, its token's queue moved to the back; undefined when none may. */
  private pick(state: PluginState): GateWaiter | undefined {
    for (const [client, queue] of state.queues) {
      if ((this.clients.get(this.clientKey(queue[0]!.claim)) ?? 0) >= this.limits.perClient) continue;
      const at = queue.findIndex((w) => !w.claim.pooled || this.pooled < this.limits.poolSize);
      if (at < 0) continue;
      const [waiter] = queue.splice(at, 1);
      state.queues.delete(client);
      if (queue.length) state.queues.set(client, queue);
      state.waiting--;
      return waiter;
    }
    return undefined;
  }

  private grant(state: PluginState, waiter: GateWaiter): void {
    const { claim } = waiter;
    state.running++;
    state.admitted++;
    state.peak = Math.max(state.peak, state.running);
    this.running++;
    this.admitted++;
    if (claim.pooled) this.pooled++;
    const key = this.clientKey(claim);
    const running = (this.clients.get(key) ?? 0) + 1;
    this.clients.set(key, running);
    this.clientPeak = Math.max(this.clientPeak, running);
    waiter.granted = true;
    waiter.resolve?.();
  }
}
