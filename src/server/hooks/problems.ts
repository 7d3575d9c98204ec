/**
 * Every answer that is not a 2xx is an RFC 9457 problem (problem.ts, failures.ts): the error
 * handler, the not-found handler (a 405 with Allow for a known path asked with another
 * method), and the known paths and their methods that tell the two apart.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { redactUrl } from '../accesslog.js';
import { problemFor } from '../failures.js';
import { problem, PROBLEM_CONTENT_TYPE, ProblemError } from '../problem.js';
import { noteProblem, type LogEntry } from './requestlog.js';

export function sendProblem(reply: FastifyReply, failure: ProblemError): FastifyReply {
  noteProblem(reply, failure.problem.type);
  return reply.code(failure.problem.status).headers(failure.headers).type(PROBLEM_CONTENT_TYPE).send(failure.problem);
}

/** Known paths and their methods, so an unsupported method is a 405 rather than a 404 (and a preflight knows them). */
export class KnownRoutes {
  private readonly routes: { pattern: RegExp; methods: string[] }[] = [];

  add(url: string, method: string | string[]): void {
    const segments = url.replace(/\/$/, '').split('/');
    const pattern = new RegExp(`^${segments.map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}/?$`);
    const methods = [method].flat();
    const known = this.routes.find((r) => r.pattern.source === pattern.source);
    if (known) known.methods.push(...methods);
    else this.routes.push({ pattern, methods: [...methods] });
  }

  /** The methods of the known path a request path matches (with repeats), if any. */
  methods(path: string): string[] | undefined {
    return this.routes.find((r) => r.pattern.test(path))?.methods;
  }
}

export function registerKnownRoutes(app: FastifyInstance): KnownRoutes {
  const known = new KnownRoutes();
  app.addHook('onRoute', (route) => known.add(route.url, route.method));
  return known;
}

export interface ProblemDeps {
  known: KnownRoutes;
  bodyLimit: number;
  /** Failures (data errors, timeouts, unexpected errors) get a line of their own. */
  log: LogEntry;
  now: () => Date;
}

export function registerProblems(app: FastifyInstance, { known, bodyLimit, log, now }: ProblemDeps): void {
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = known.methods(path);
    if (allowed?.length) {
      const allow = [...new Set(allowed)].sort().join(', ');
      return sendProblem(reply, new ProblemError(problem('methodNotAllowed', `${redactUrl(path)} answers ${allow}, not ${request.method}`), { allow }));
    }
    return sendProblem(reply, new ProblemError(problem('notFound', `no route for ${request.method} ${redactUrl(path)}`)));
  });

  app.setErrorHandler((error, request, reply) => {
    const { failure, report } = problemFor(error, bodyLimit);
    if (report) {
      log({
        time: now().toISOString(),
        msg: report,
        method: request.method,
        path: redactUrl(request.url),
        error: error instanceof Error ? error.message : String(error),
        ...(report === 'unexpected error' && error instanceof Error ? { stack: error.stack } : {}),
      });
    }
    return sendProblem(reply, failure);
  });
}
