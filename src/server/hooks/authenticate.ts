/**
 * Who asks: the bearer token verified (auth.ts), its plugin on the request, and one key per
 * token (ratelimit.ts rateKey) whose turns the gate counts and whose rate the limiter takes.
 * It runs per route (onRequest), before the parameters are read, so an anonymous caller learns
 * nothing about parameters.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Verifier } from '../auth.js';
import { problem, ProblemError, retryLater, unknownPlugin } from '../problem.js';
import { RateLimiter, rateKey, type RateState } from '../ratelimit.js';

declare module 'fastify' {
  interface FastifyRequest {
    plugin: string;
  }
}

export type Authenticate = (request: FastifyRequest) => Promise<void>;

export class Clients {
  readonly limiter: RateLimiter | undefined;
  /** The key of an authenticated request's token: the gate's and the rate limiter's. */
  private readonly keys = new WeakMap<FastifyRequest, string>();
  /** The rate-limit key and quota of an authenticated request (RateLimit-* headers), and whether it counted. */
  private readonly rates = new WeakMap<FastifyRequest, { key: string; refused?: RateState }>();

  constructor(perMinute: number, clock?: () => number) {
    this.limiter = perMinute > 0 ? new RateLimiter(perMinute, clock) : undefined;
  }

  keyOf(request: FastifyRequest): string | undefined {
    return this.keys.get(request);
  }

  /** Counts a request of this key against the rate limit: a refusal is the 429 problem. */
  take(request: FastifyRequest, key: string): void {
    this.keys.set(request, key);
    const limiter = this.limiter;
    if (!limiter) return;
    const decision = limiter.take(key);
    this.rates.set(request, decision.allowed ? { key } : { key, refused: { limit: limiter.perMinute, remaining: 0, resetSeconds: decision.retryAfterSeconds } });
    if (!decision.allowed) {
      throw retryLater(
        'rateLimited',
        `over the limit of ${limiter.perMinute} requests a minute for this token; try again in ${decision.retryAfterSeconds} s`,
        decision.retryAfterSeconds,
      );
    }
  }

  /** A request that cost no query (a 304) gives its token back. */
  giveBack(request: FastifyRequest): void {
    const rate = this.rates.get(request);
    if (this.limiter && rate && !rate.refused) this.limiter.giveBack(rate.key);
  }

  /** RateLimit-Limit, -Remaining and -Reset of the request's token, when it was counted. */
  rateHeaders(request: FastifyRequest, reply: FastifyReply): void {
    const rate = this.rates.get(request);
    if (!this.limiter || !rate) return;
    const state = rate.refused ?? this.limiter.state(rate.key);
    reply.header('ratelimit-limit', String(state.limit));
    reply.header('ratelimit-remaining', String(state.remaining));
    reply.header('ratelimit-reset', String(state.resetSeconds));
  }
}

/** A credential's start, after a comma or at the header's: a scheme, blanks, something (`Bearer x`; not a parameter of one, `realm="a"`). */
const CREDENTIAL = /^\s*[A-Za-z][\w!#$%&'*+.^`|~-]*\s+\S/;

/**
 * How many credentials the request sent: its Authorization headers as they came (Node keeps the
 * first of several in request.headers and drops the others, which rawHeaders still holds), one
 * holding several joined by commas (as a proxy joins repeated headers) counting each.
 */
function credentialsSent(request: FastifyRequest): number {
  const raw = request.raw.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'authorization') count += Math.max(1, raw[i + 1]!.split(',').filter((part) => CREDENTIAL.test(part)).length);
  }
  return count;
}

/** The request's plugin (empty until authenticated), and the route hook that authenticates, then takes the token's rate. */
export function registerAuth(app: FastifyInstance, clients: Clients, verify: Verifier, has: (plugin: string) => boolean): Authenticate {
  app.decorateRequest('plugin', '');
  return async (request) => {
    // Two tokens (of two plugins, say) would leave the server to pick whose data answers: a 400, never the first.
    const sent = credentialsSent(request);
    if (sent > 1) throw new ProblemError(problem('badRequest', `send one Authorization header with one bearer token; this request has ${sent} credentials`));
    const authorization = request.headers.authorization;
    const { plugin, subject } = await verify(authorization);
    if (!has(plugin)) {
      throw unknownPlugin(plugin);
    }
    request.plugin = plugin;
    // Whose turns the gate counts and whose rate the limiter takes: one key (the token's subject
    // within its plugin, else a digest of the token), never the token itself.
    clients.take(request, rateKey(plugin, subject, (authorization ?? '').replace(/^Bearer\s+/i, '').trim()));
  };
}
