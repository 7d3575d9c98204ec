/**
 * Work on the data: a fair turn from the gate (pool.ts FairGate: bounded per plugin and token,
 * round-robin between plugins), a backend of the plugin on a pooled connection, all within the
 * query time budget, which runs from the request's arrival.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Backend } from '../../backend.js';
import { ConvxError } from '../../errors.js';
import { outsideBudget, QueryTimeoutError, withQueryBudget } from '../../local/db.js';
import type { ServerLimits } from '../limits.js';
import type { LocalBackend } from '../../local/backend.js';
import type { Held, ServedDataset } from '../plugins.js';
import { defaultPluginConcurrency, defaultPluginQueue, FairGate } from '../pool.js';
import { unknownPlugin } from '../problem.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Who may run work on the data now (pool.ts FairGate): its stats are the tests' window on fairness. */
    gate: FairGate;
  }
}

/** The gate of a server's limits: per plugin, per token and pooled bounds, the defaults derived from the pool's size. */
export function gateFor(limits: ServerLimits, poolSize: number): FairGate {
  const perPlugin = limits.pluginConcurrency ?? defaultPluginConcurrency(poolSize);
  return new FairGate({
    poolSize,
    perPlugin,
    perClient: limits.tokenConcurrency ?? perPlugin,
    queuePerPlugin: limits.pluginQueue ?? defaultPluginQueue(poolSize),
  });
}

/** The gate, made at the first request, when the dataset (and its pool's size) is there. */
export class LazyGate {
  private gate: FairGate | undefined;

  constructor(
    private readonly limits: ServerLimits,
    private readonly poolSize: () => number,
  ) {}

  get(): FairGate {
    return (this.gate ??= gateFor(this.limits, this.poolSize()));
  }

  /** The gate if a request has made it (the drain refuses its waiting requests). */
  get made(): FairGate | undefined {
    return this.gate;
  }
}

/** app.gate. */
export function registerGate(app: FastifyInstance, gate: LazyGate): void {
  app.decorate('gate', { getter: () => gate.get() });
}

export interface Connection {
  pooled?: boolean;
}

export interface BudgetDeps {
  app: FastifyInstance;
  limits: ServerLimits;
  /** The key of the request's token (authenticate.ts), whose turns the gate counts. */
  clientOf: (request: FastifyRequest) => string | undefined;
  /** When the request arrived (requestlog.ts), as performance.now(). */
  arrival: (request: FastifyRequest) => number;
}

/**
 * Work on a backend of the plugin's data (hold: the data served now, or the one a request pinned), once the
 * request's turn comes, interrupted when its queries run over the time budget.
 */
export type DataWork = <T>(request: FastifyRequest, work: (backend: Backend) => Promise<T>, hold: (plugin: string) => Promise<Held | undefined>, connection?: Connection) => Promise<T>;

export function dataAccess({ app, limits, clientOf, arrival }: BudgetDeps): DataWork {
  /** Work on the data once the request's turn comes (bounded per plugin and token, round-robin between plugins). */
  const withTurn = async <T>(request: FastifyRequest, connection: Connection, work: () => Promise<T>): Promise<T> => {
    // A client that goes away while its request waits for a turn takes it out of the queue.
    const gone = new AbortController();
    const abandon = () => gone.abort();
    const socket = request.raw.socket;
    socket?.once('close', abandon);
    let ticket;
    try {
      ticket = await app.gate.enter({ plugin: request.plugin, client: clientOf(request) ?? request.plugin, pooled: connection.pooled ?? true }, gone.signal);
    } finally {
      socket?.removeListener('close', abandon);
    }
    try {
      return await work();
    } finally {
      ticket.leave();
    }
  };
  return (request, work, hold, connection = {}) =>
    withQueryBudget(limits.queryTimeoutMs, () => withTurn(request, connection, () => withHeld(request, work, hold, connection)), arrival(request));
}

/**
 * Runs work on a backend of the plugin's data, held meanwhile; a directory of plugin files opens
 * the plugin's file here on its first request, outside the request's budget (other requests
 * wait for the same opening).
 */
async function withHeld<T>(request: FastifyRequest, work: (backend: Backend) => Promise<T>, hold: (plugin: string) => Promise<Held | undefined>, connection: Connection): Promise<T> {
  const held = await outsideBudget(() => hold(request.plugin));
  // A reload between authentication and here may have swapped in data without this plugin.
  if (!held || !held.dataset.has(request.plugin)) {
    held?.release();
    throw unknownPlugin(request.plugin);
  }
  let backend: LocalBackend;
  try {
    backend = await held.dataset.backend(request.plugin, connection);
  } finally {
    // From here the backend counts the request (its data is not closed under it): the hold is let go.
    held.release();
  }
  return withBackend(work, held.dataset, backend);
}

/** Runs work on a backend of the dataset, on a pooled connection; one whose work failed is replaced. */
async function withBackend<T>(work: (backend: Backend) => Promise<T>, dataset: ServedDataset, backend: LocalBackend): Promise<T> {
  try {
    return await work(backend);
  } catch (error) {
    // An answer such as a data or usage error leaves the connection as it was (and its prepared
    // statements with it); an interrupted or failed query may not: that connection is replaced.
    if (!(error instanceof ConvxError) || error instanceof QueryTimeoutError) dataset.discard(backend);
    throw error;
  } finally {
    await backend.close();
  }
}
