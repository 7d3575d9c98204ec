/**
 * Registers the routes table (routes.ts), in one place: each row's schema (documentation only),
 * its hooks (the token, a JSON body) and its answer (conditional, budgeted or public).
 */
import type { FastifyInstance, FastifyRequest, RouteHandlerMethod } from 'fastify';
import type { Authenticate } from './hooks/authenticate.js';
import type { DataWork } from './hooks/budget.js';
import type { TaggedQuery } from './hooks/conditional.js';
import type { OperationKinds } from './hooks/openapi.js';
import { requestParams } from './conventions.js';
import type { ServedData } from './plugins.js';
import { problem, ProblemError } from './problem.js';
import type { DataRoute, RouteRow } from './routes.js';

export interface RouterDeps {
  authenticate: Authenticate;
  /** Work on the data (hooks/budget.ts) and the same with an ETag (hooks/conditional.ts). */
  data: DataWork;
  tagged: TaggedQuery;
  /** Each path's operation kind, for the OpenAPI document (hooks/openapi.ts). */
  docs: OperationKinds;
  served: ServedData;
  now: () => Date;
}

export function registerRoutes(app: FastifyInstance, rows: readonly RouteRow[], deps: RouterDeps): void {
  // A request is validated once, by the parser the CLI uses too (model/query.ts): the routes'
  // query schemas document the parameters in /openapi.json, and the validate body is checked by
  // the validation, which answers with findings. Nothing is validated by schema here.
  app.setValidatorCompiler(() => () => true);
  for (const row of rows) {
    deps.docs.set(row.path, row.kind);
    app.route({
      method: row.method,
      url: row.path,
      // Auth runs before parameter validation, so an anonymous caller learns nothing about parameters; then the token's rate.
      ...(row.answer === 'public' ? {} : { onRequest: deps.authenticate }),
      schema: schemaOf(row),
      // A request without a JSON content type never reaches the handler (fastify answers 415 for other types).
      ...(row.answer !== 'public' && row.jsonBody ? { preValidation: requireJson } : {}),
      handler: row.answer === 'public' ? async () => row.handler(deps.served) : dataHandler(row, deps),
    });
  }
}

function schemaOf(row: RouteRow): Record<string, unknown> {
  return {
    operationId: row.operationId,
    summary: row.summary,
    ...(row.description !== undefined ? { description: row.description } : {}),
    ...(row.querystring ? { querystring: row.querystring } : {}),
    security: row.answer === 'public' ? [] : [{ bearer: [] }],
  };
}

async function requireJson(request: FastifyRequest): Promise<void> {
  if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
    throw new ProblemError(problem('unsupportedMediaType', 'send the request body as application/json'));
  }
}

/** Parse, then the backend's answer: with an ETag, or budgeted on the data served now (a look-up's nothing is a 404). */
function dataHandler(row: DataRoute<unknown>, deps: RouterDeps): RouteHandlerMethod {
  const parse = (request: FastifyRequest) =>
    row.parse({ query: requestParams(request.query), params: request.params as Record<string, string>, body: request.body, now: deps.now });
  if (row.answer === 'etag') {
    return async (request, reply) => {
      const parsed = parse(request);
      return deps.tagged(request, reply, parsed, async (b) => row.handler(b, parsed));
    };
  }
  const connection = row.ownConnection ? { pooled: false } : undefined;
  return async (request) => {
    const parsed = parse(request);
    const found = await deps.data(request, async (b) => row.handler(b, parsed), (plugin) => deps.served.hold(plugin), connection);
    if (found === undefined && row.missing) throw new ProblemError(problem('notFound', row.missing(parsed)));
    return found;
  };
}
