/**
 * The HTTP interface over a served dataset. Routes are thin: parse the query
 * into the model's types, call a plugin-scoped Backend, send what it returns.
 */
import swagger from '@fastify/swagger';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Backend } from '../backend.js';
import { DataError, UsageError } from '../errors.js';
import { parseItemsQuery, parseReportQuery, type RawParams } from '../model/query.js';
import type { Verifier } from './auth.js';
import { problem, ProblemError, PROBLEM_TYPES, type Problem } from './problem.js';
import { ALIAS_QUERY, ITEMS_QUERY, REPORT_QUERY, responsesFor } from '../model/schemas.js';
import { COMPONENT_SCHEMAS } from '../model/shapes.js';
import type { ServedDataset } from './tenants.js';

export interface AppOptions {
  /** The dataset served now (it may be swapped by a reload). */
  dataset: () => ServedDataset;
  verify: Verifier;
  /** One JSON object per line on stderr: the access log and failures. */
  log: (entry: Record<string, unknown>) => void;
  now?: () => Date;
  version: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    plugin: string;
  }
}

/** Turns the query object fastify parsed back into the raw parameters the shared parser takes. */
function rawParams(query: unknown, fixed: RawParams = {}): RawParams {
  const raw: RawParams = {};
  for (const [key, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (value !== undefined) raw[key] = String(value);
  }
  return { ...raw, ...fixed };
}

function sendProblem(reply: FastifyReply, body: Problem): FastifyReply {
  return reply.code(body.status).type('application/problem+json').send(body);
}

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

function validationProblems(errors: AjvError[]) {
  return errors.map((e) => {
    const parameter = String(e.params.missingProperty ?? e.params.additionalProperty ?? e.instancePath.replace(/^\//, '')) || 'query';
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') message = 'is required';
    else if (e.keyword === 'additionalProperties') message = 'is not a parameter of this operation';
    else if (e.keyword === 'pattern' && /^date/.test(parameter)) message = 'is not a date of the form YYYY-MM-DD';
    else if (e.keyword === 'type' && e.params.type === 'integer') message = 'must be a whole number';
    return { parameter, message };
  });
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const now = options.now ?? (() => new Date());
  const app = Fastify({
    logger: false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true, allErrors: true } },
    routerOptions: { ignoreTrailingSlash: true },
  });

  const docs = new Map<string, 'ItemsResponse' | 'ReportResponse' | 'ValidateResponse'>();
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'convx conversion reporting and delivery validation',
        version: options.version,
        description: 'Served by `convx serve` from a local dataset. Every path but /openapi.json and /healthz needs a bearer JWT whose "plugin" claim names the tenant.',
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
        schemas: COMPONENT_SCHEMAS as never,
      },
    },
    transform: ({ schema, url }) => {
      const documented = docs.has(url) ? { ...schema, response: responsesFor(docs.get(url)!) } : schema;
      return { schema: documented as never, url };
    },
  });

  app.decorateRequest('plugin', '');
  const started = new WeakMap<FastifyRequest, bigint>();
  app.addHook('onRequest', async (request) => {
    started.set(request, process.hrtime.bigint());
  });
  app.addHook('onResponse', async (request, reply) => {
    const begun = started.get(request);
    options.log({
      time: now().toISOString(),
      msg: 'request',
      method: request.method,
      path: request.url,
      status: reply.statusCode,
      ms: begun === undefined ? null : Math.round(Number(process.hrtime.bigint() - begun) / 1e5) / 10,
      ...(request.plugin ? { plugin: request.plugin } : {}),
    });
  });

  /** Auth runs before parameter validation, so an anonymous caller learns nothing about parameters. */
  const authenticate = async (request: FastifyRequest) => {
    const { plugin } = await options.verify(request.headers.authorization);
    if (!options.dataset().has(plugin)) {
      throw new ProblemError(problem('unknownPlugin', `the token's plugin "${plugin}" has no data on this server`));
    }
    request.plugin = plugin;
  };

  async function withBackend<T>(request: FastifyRequest, work: (backend: Backend) => Promise<T>): Promise<T> {
    const backend = await options.dataset().backend(request.plugin);
    try {
      return await work(backend);
    } finally {
      await backend.close();
    }
  }

  const secured = (schema: Record<string, unknown>) => ({ ...schema, security: [{ bearer: [] }] });

  docs.set('/v1/conversions', 'ReportResponse');
  app.get(
    '/v1/conversions',
    { onRequest: authenticate, schema: secured({ summary: 'One aggregate row per attributing source', querystring: REPORT_QUERY }) },
    async (request) => {
      const query = parseReportQuery(rawParams(request.query), now());
      const page = await withBackend(request, (b) => b.report(query));
      return { conversions: page.rows, paging: page.paging };
    },
  );

  const itemsRoute = (url: string, summary: string, querystring: object, fixed: (params: Record<string, string>) => RawParams) => {
    docs.set(url, 'ItemsResponse');
    app.get(url, { onRequest: authenticate, schema: secured({ summary, querystring }) }, async (request) => {
      const raw = rawParams(request.query, fixed(request.params as Record<string, string>));
      const query = parseItemsQuery(raw, { allowCampaignId: true });
      const page = await withBackend(request, (b) => b.items(query));
      return { conversions: page.rows, paging: page.paging };
    });
  };
  itemsRoute('/v1/conversions/items', 'Individual conversion records', ITEMS_QUERY, () => ({}));
  itemsRoute('/v1/campaigns/:campaignId/conversions', 'Conversions of a campaign or automation', ALIAS_QUERY, (p) => ({
    campaignId: p.campaignId,
  }));
  itemsRoute('/v1/deliveries/:smartflowId/conversions', 'Conversions of a smartflow', ALIAS_QUERY, (p) => ({
    smartflowId: p.smartflowId,
  }));
  itemsRoute(
    '/v1/deliveries/:smartflowId/:deliveryId/conversions',
    'Conversions of one delivery of a smartflow',
    ALIAS_QUERY,
    (p) => ({ smartflowId: p.smartflowId, deliveryId: p.deliveryId }),
  );

  docs.set('/v4/delivery/e-mail/validate', 'ValidateResponse');
  app.post(
    '/v4/delivery/e-mail/validate',
    {
      onRequest: authenticate,
      schema: secured({
        summary: 'Dry run of an e-mail delivery: audience, suppression, languages, rendered samples and findings',
        description: 'Findings, including an invalid request body, are in render.errors and render.warnings of a 200 answer.',
      }),
    },
    async (request) => withBackend(request, (b) => b.validateEmail(request.body)),
  );

  app.get('/healthz', { schema: { summary: 'Liveness and the time the dataset was loaded' } }, async () => ({
    status: 'ok',
    loadedAt: options.dataset().loadedAt.toISOString(),
  }));
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problem('notFound', `no route for ${request.method} ${request.url.split('?')[0]}`)),
  );

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.validation) {
      const errors = validationProblems(error.validation as unknown as AjvError[]);
      const kind = error.validationContext === 'body' ? 'invalidBody' : 'invalidParameters';
      return sendProblem(reply, problem(kind, errors.map((e) => `${e.parameter}: ${e.message}`).join('; '), errors));
    }
    if (error instanceof ProblemError) return sendProblem(reply, error.problem);
    if (error instanceof UsageError) {
      return sendProblem(reply, problem('invalidParameters', error.message, error.problems));
    }
    if (error instanceof DataError) {
      options.log({ time: now().toISOString(), msg: 'data error', path: request.url, error: error.message });
      return sendProblem(reply, problem('dataError', error.message));
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      const status = error.statusCode;
      return sendProblem(reply, {
        type: status === 400 ? PROBLEM_TYPES.invalidBody.type : 'about:blank',
        title: status === 400 ? PROBLEM_TYPES.invalidBody.title : (error.name ?? 'Client error'),
        status,
        detail: error.message,
      });
    }
    options.log({
      time: now().toISOString(),
      msg: 'unexpected error',
      method: request.method,
      path: request.url,
      error: error.message,
      stack: error.stack,
    });
    return sendProblem(reply, problem('internal', 'the server failed to answer; its log has the details'));
  });

  return app;
}
