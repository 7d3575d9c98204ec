/**
 * A small pool of DuckDB connections to one database, lent to requests and
 * reused, instead of a connection opened and closed per request. At most
 * `size` connections exist; a request beyond that waits for one, first come
 * first served. A connection whose request failed or was interrupted (the query
 * time budget, db.ts withQueryBudget) is closed and replaced, never lent again.
 */
import { availableParallelism } from 'node:os';
import type { Database } from '../local/db.js';

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

export class ConnectionPool {
  private readonly idle: Database[] = [];
  private readonly waiters: Waiter[] = [];
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
    return new Promise<Database>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private closeOne(db: Database): void {
    this.count--;
    try {
      db.close();
    } catch {
      // closing a broken connection may fail; it is gone either way
    }
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
