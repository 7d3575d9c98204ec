/**
 * The HTTP interface over a served dataset, composed along a request's way: the fastify
 * instance and the answers made outside its hooks (hooks/framework.ts), the OpenAPI document,
 * the access log, the drain, the request checks, CORS, the headers of every answer and
 * compression, the token and its rate (per route), then the routes table (routes.ts, registered
 * by router.ts: parse, the Backend on a fair turn within the time budget, an ETag), and the
 * problems. Every answer that is not a 2xx is an RFC 9457 problem (see problem.ts), the
 * framework's and the HTTP parser's own included. Hook order matters: it is the order below.
 */
import type { FastifyInstance } from 'fastify';
import type { Verifier } from './auth.js';
import { DEFAULT_LIMITS, type ServerLimits } from './limits.js';
import { servedFrom, type ServedData, type ServedDataset } from './plugins.js';
import { Clients, registerAuth } from './hooks/authenticate.js';
import { dataAccess, LazyGate, registerGate } from './hooks/budget.js';
import { registerRequestChecks } from './hooks/checks.js';
import { taggedQueries } from './hooks/conditional.js';
import { CorsPolicy, registerCors } from './hooks/cors.js';
import { Drain, registerDrain } from './hooks/drain.js';
import { createFastify, registerExpectation } from './hooks/framework.js';
import { answerHeaders, registerAnswerHeaders } from './hooks/headers.js';
import { registerOpenApi, registerOpenApiRoute } from './hooks/openapi.js';
import { registerKnownRoutes, registerProblems } from './hooks/problems.js';
import { registerAccessLog, RequestLog } from './hooks/requestlog.js';
import { registerSending } from './hooks/sending.js';
import { defaultPluginConcurrency } from './pool.js';
import { registerRoutes } from './router.js';
import { ROUTES } from './routes.js';

export { gateFor } from './hooks/budget.js';

export interface AppOptions {
  /** The dataset served now (it may be swapped by a reload); or served. */
  dataset?: () => ServedDataset;
  /** The dataset of a data version a request is pinned to (DatasetHolder.byVersion); default: the one served now, if it is that version. */
  datasetOf?: (dataVersion: string) => ServedDataset | undefined;
  /** When the latest reload of dataset failed (DatasetHolder.reloadFailedAt); default: never. */
  reloadFailedAt?: () => Date | undefined;
  /** What requests are answered from, each plugin's data (plugins.ts ServedData): a directory of plugin files; default: dataset and datasetOf. */
  served?: ServedData;
  verify: Verifier;
  /** One JSON object per line on stderr: the access log and failures. */
  log: (entry: Record<string, unknown>) => void;
  now?: () => Date;
  version: string;
  /** Limits; any left out take DEFAULT_LIMITS. */
  limits?: Partial<ServerLimits>;
  /** The rate limiter's clock in milliseconds (tests). */
  clock?: () => number;
  /** gzip or br for answers over 1 KiB, as Accept-Encoding asks (default on; off behind a proxy that compresses). */
  compression?: boolean;
  /** The access log's lines of /healthz answered 200: a load balancer's checks (default on). */
  healthLog?: boolean;
  /** Origins (scheme://host[:port]) whose browser scripts may call the API (CORS); none by default. */
  corsOrigins?: readonly string[];
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const now = options.now ?? (() => new Date());
  const limits: ServerLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const compression = options.compression ?? true;
  const log = new RequestLog(options.log, now);
  const clients = new Clients(limits.rateLimitPerMinute, options.clock);
  const cors = new CorsPolicy(options.corsOrigins);
  const served = servedOf(options);
  const gate = new LazyGate(limits, () => served.poolSize);
  const drain = new Drain(() => gate.made);
  const headers = answerHeaders(drain, clients, cors);
  const app = createFastify({ limits, log, headers });
  registerGate(app, gate);
  // Only JSON bodies: fastify would otherwise also take text/plain.
  app.removeContentTypeParser('text/plain');
  registerExpectation(app, log);
  const docs = await registerOpenApi(app, options.version);
  const known = registerKnownRoutes(app);
  const authenticate = registerAuth(app, clients, options.verify, (plugin) => served.has(plugin));
  registerAccessLog(app, log, options.healthLog === false ? { quiet: ROUTES.find((route) => route.kind === 'health')?.path } : {});
  registerDrain(app, drain);
  registerRequestChecks(app);
  registerCors(app, cors, known);
  // before the compression of registerAnswerHeaders: a large answer refused is a small problem
  registerSending(app, { sendTimeoutMs: limits.sendTimeoutMs ?? DEFAULT_LIMITS.sendTimeoutMs!, perPlugin: () => limits.pluginConcurrency ?? defaultPluginConcurrency(served.poolSize) });
  registerAnswerHeaders(app, headers, compression);
  const data = dataAccess({ app, limits, clientOf: (request) => clients.keyOf(request), arrival: (request) => log.arrival(request) });
  const tagged = taggedQueries({ served, data, giveBack: (request) => clients.giveBack(request), compression });
  registerRoutes(app, ROUTES, { authenticate, data, tagged, docs, served, now });
  registerOpenApiRoute(app, compression);
  registerProblems(app, { known, bodyLimit: limits.bodyLimit, log: options.log, now });
  return app;
}

function servedOf(options: AppOptions): ServedData {
  if (options.served) return options.served;
  if (!options.dataset) throw new Error('internal: buildApp needs a dataset or served data');
  return servedFrom(options.dataset, options.datasetOf, options.reloadFailedAt);
}
