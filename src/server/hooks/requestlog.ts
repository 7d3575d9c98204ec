/**
 * The access log: one JSON line per answer (accesslog.ts says what it may hold), and when each
 * request arrived, which is where its time in the log and its query time budget run from.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { redactUrl } from '../accesslog.js';

export type LogEntry = (entry: Record<string, unknown>) => void;

/**
 * The problem an answer was (its type's last part, `invalid-token`), by the answer: its log line
 * names it, so that an operator tells an expired token from a wrong signature or an unknown
 * plugin without the client's body (the detail, which may quote the request, is not logged).
 */
const problems = new WeakMap<object, string>();
export const noteProblem = (reply: FastifyReply, type: string): void => void problems.set(reply.raw, type.replace(/^urn:convx:problem:/, ''));
/** The problem an answer was (noteProblem), if any. */
export const problemOf = (reply: FastifyReply): string | undefined => problems.get(reply.raw);

export class RequestLog {
  private readonly started = new WeakMap<FastifyRequest, bigint>();

  constructor(
    readonly write: LogEntry,
    readonly now: () => Date,
  ) {}

  /** The line of an answered request: its redacted path, status, time taken, plugin and id. */
  line(method: string, url: string, status: number, begun?: bigint, plugin?: string, requestId?: string, problem?: string): void {
    this.write({
      time: this.now().toISOString(),
      msg: 'request',
      method,
      path: redactUrl(url),
      status,
      ms: begun === undefined ? null : Math.round(Number(process.hrtime.bigint() - begun) / 1e5) / 10,
      ...(plugin ? { plugin } : {}),
      ...(problem ? { problem } : {}),
      ...(requestId ? { requestId } : {}),
    });
  }

  arrived(request: FastifyRequest): void {
    this.started.set(request, process.hrtime.bigint());
  }

  /** When the request arrived (process.hrtime), if it reached onRequest. */
  begun(request: FastifyRequest): bigint | undefined {
    return this.started.get(request);
  }

  /** When the request arrived, as performance.now(): its time budget runs from there. */
  arrival(request: FastifyRequest): number {
    const begun = this.started.get(request);
    return begun === undefined ? performance.now() : performance.now() - Number(process.hrtime.bigint() - begun) / 1e6;
  }
}

/**
 * The arrival of every request (onRequest, before any refusal) and the line of every answer
 * (onResponse), but the answers 200 of the route quiet names (--no-health-log: the health route).
 */
export function registerAccessLog(app: FastifyInstance, log: RequestLog, { quiet }: { quiet?: string } = {}): void {
  app.addHook('onRequest', async (request) => {
    log.arrived(request);
  });
  app.addHook('onResponse', async (request, reply) => {
    if (quiet !== undefined && reply.statusCode === 200 && request.routeOptions.url === quiet) return;
    log.line(request.method, request.url, reply.statusCode, log.begun(request), request.plugin || undefined, request.id, problemOf(reply));
  });
}
