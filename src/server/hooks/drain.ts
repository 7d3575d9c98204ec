/**
 * The shutdown drain: once it begins, every request is refused with the 503 shutting-down
 * problem (the headers add Connection: close), those waiting for a turn included, and
 * app.drain() resolves when the requests admitted before have been answered.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { RETRY_AFTER_UNAVAILABLE_SECONDS } from '../limits.js';
import type { FairGate } from '../pool.js';
import { retryLater, type ProblemError } from '../problem.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Begins the shutdown drain: every request from now on is refused with the 503 problem
     * (and Connection: close), on new and open connections alike; resolves once the requests
     * begun before have been answered. app.close() then closes the connections.
     */
    drain(): Promise<void>;
    /**
     * Requests admitted and not yet answered: what the drain waits for. A request counts once,
     * whatever it holds meanwhile (the data it reads, a connection).
     */
    readonly requestsInFlight: number;
  }
}

const shuttingDown = (): ProblemError => retryLater('shuttingDown', 'the server is shutting down; send the request again', RETRY_AFTER_UNAVAILABLE_SECONDS);

export class Drain {
  draining = false;
  /** Requests admitted (not refused by the drain) and not yet answered, and who waits for there to be none. */
  private admitted = 0;
  private drained: (() => void) | undefined;

  /** @param gate the gate, once made: its waiting requests are refused when the drain begins */
  constructor(private readonly gate: () => FairGate | undefined) {}

  /** The drain begins: requests still waiting for their turn are answered 503 shutting-down, not run. */
  begin(): void {
    this.draining = true;
    this.gate()?.refuseWaiting(shuttingDown);
  }

  /** Requests admitted and not yet answered (or whose connection has not closed). */
  get inFlight(): number {
    return this.admitted;
  }

  /** Begins the drain; resolves once no admitted request is left. */
  settled(): Promise<void> {
    this.begin();
    return new Promise<void>((resolve) => {
      this.drained = resolve;
      this.settle();
    });
  }

  /** A request arrives: refused while draining, else counted until its answer is sent (or its connection closes). */
  admit(reply: FastifyReply): void {
    if (this.draining) throw shuttingDown();
    this.admitted += 1;
    reply.raw.once('close', () => {
      this.admitted -= 1;
      this.settle();
    });
  }

  private settle(): void {
    if (this.draining && this.admitted === 0) this.drained?.();
  }
}

export function registerDrain(app: FastifyInstance, drain: Drain): void {
  app.decorate('drain', () => drain.settled());
  app.decorate('requestsInFlight', { getter: () => drain.inFlight });
  app.addHook('preClose', async () => {
    drain.begin();
  });
  app.addHook('onRequest', async (_request, reply) => {
    drain.admit(reply);
  });
}
