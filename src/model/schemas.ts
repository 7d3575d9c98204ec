/**
 * JSON Schemas of the query parameters the server documents in /openapi.json
 * (from the table in parameters.ts), and the documented responses of each route.
 */
import { describe, field, parameters, type Operation, type Parameter } from './parameters.js';
import { SORT_FIELDS } from './query.js';
import { ref } from './shapes.js';
import { SOURCE_TYPES } from './types.js';

/**
 * A parameter's JSON Schema, from its row of the table: what /openapi.json documents.
 * The server does not validate with these: the shared parser (query.ts) checks a
 * request once, on both sides, so the rules and their wording are the CLI's too.
 */
function parameterSchema(p: Parameter, operation: Operation): Record<string, unknown> {
  const description = describe(p, operation);
  switch (p.kind) {
    case 'date':
      return { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: `${description} (YYYY-MM-DD, UTC, inclusive)` };
    case 'count': {
      const { min, max } = field(p, 'count')!;
      return { type: 'integer', minimum: min, ...(max === Number.MAX_SAFE_INTEGER ? {} : { maximum: max }), description };
    }
    case 'sort': {
      const fallback = field(p, 'sort')![operation].fallback;
      return { type: 'string', description: `${description} (default ${fallback}): ${SORT_FIELDS[operation].join(', ')}` };
    }
    case 'sourceType':
      return { type: 'string', enum: [...SOURCE_TYPES], description };
    case 'codes':
    case 'id':
    case 'text':
      return { type: 'string', description };
  }
}

/** The query string of an operation, as the table says (a per-source alias without the source filters). */
function querySchema(operation: Operation, alias = false) {
  const taken = parameters(operation).filter((p) => !field(p, 'pathOnly') && !(alias && field(p, 'source')));
  const required = taken.filter((p) => (field(p, 'required') ?? []).includes(operation)).map((p) => p.name);
  return {
    type: 'object',
    additionalProperties: false,
    ...(required.length ? { required } : {}),
    properties: Object.fromEntries(taken.map((p) => [p.name, parameterSchema(p, operation)])),
  };
}

export const REPORT_QUERY = querySchema('report');
export const ITEMS_QUERY = querySchema('items');
/** The per-source aliases: the items query with its source fixed by the path. */
export const ALIAS_QUERY = querySchema('items', true);

/** Response headers in fastify's form (@fastify/swagger turns each into an OpenAPI header object). */
const retryAfter = {
  'Retry-After': { type: 'integer', minimum: 1, description: 'seconds to wait before trying again' },
};

const problemResponse = (description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/problem+json': { schema: ref('Problem') } },
});

/** The look-ups by id take no query parameters. */
export const NO_QUERY = { type: 'object', additionalProperties: false, properties: {} } as const;

const text = { type: 'string' } as const;
// null as shapes.ts writes it (the OpenAPI document turns it into nullable: true)
const nullableText = { type: ['string', 'null'] } as const;
const touchSource = {
  type: 'object',
  required: ['type', 'id', 'name'],
  additionalProperties: false,
  properties: { type: text, id: text, name: text },
} as const;

/** GET /v1/conversions/orders/{orderId}: the order's conversions over every date, or why it has none. */
export const ORDER_RESPONSE = {
  type: 'object',
  required: ['orderId', 'conversions', 'reasons'],
  additionalProperties: false,
  properties: {
    orderId: text,
    conversions: { type: 'array', items: ref('ConversionRecord'), description: 'the order and its refunds, oldest first; empty when it is not a conversion' },
    reasons: { type: 'array', items: text, description: 'why the order is not a conversion (empty when it is one)' },
  },
} as const;

/** GET /v1/contacts/{contact}/conversions: a contact's conversions and clicks. */
export const CONTACT_RESPONSE = {
  type: 'object',
  required: ['contact', 'matchedBy', 'orders', 'conversions', 'clicks'],
  additionalProperties: false,
  properties: {
    contact: {
      type: 'object',
      required: ['contactId', 'clientContactId', 'email', 'firstName', 'surname'],
      additionalProperties: false,
      properties: { contactId: text, clientContactId: nullableText, email: nullableText, firstName: nullableText, surname: nullableText },
    },
    matchedBy: { type: 'string', enum: ['contactId', 'email', 'clientContactId'] },
    orders: {
      type: 'array',
      description: 'every order of the contact, oldest first, and why one is not a conversion',
      items: {
        type: 'object',
        required: ['orderId', 'datetime', 'conversion', 'reasons'],
        additionalProperties: false,
        properties: { orderId: text, datetime: text, conversion: { type: 'boolean' }, reasons: { type: 'array', items: text } },
      },
    },
    conversions: { type: 'array', items: ref('ConversionRecord') },
    clicks: {
      type: 'array',
      items: {
        type: 'object',
        required: ['datetime', 'source', 'orderIds', 'reason'],
        additionalProperties: false,
        properties: {
          datetime: text,
          source: touchSource,
          orderIds: { type: 'array', items: text, description: 'the orders this click decided' },
          reason: { ...nullableText, description: 'why it decided no order (null when it decided one)' },
        },
      },
    },
  },
} as const;

/** GET .../recipients/{contactId}/activity (a record's activityUrl): the contact's touches of that source. */
export const ACTIVITY_RESPONSE = {
  type: 'object',
  required: ['contactId', 'touches'],
  additionalProperties: false,
  properties: {
    contactId: text,
    touches: {
      type: 'array',
      items: {
        type: 'object',
        required: ['datetime', 'touch', 'source'],
        additionalProperties: false,
        properties: { datetime: text, touch: text, source: touchSource },
      },
    },
  },
} as const;

/** What each route does, for its documented responses. */
export type OperationKind = 'report' | 'items' | 'validate' | 'health' | 'order' | 'contact' | 'activity';

const LOOKUP_SCHEMA = { order: ORDER_RESPONSE, contact: CONTACT_RESPONSE, activity: ACTIVITY_RESPONSE } as const;
const LOOKUP_MISSING = {
  order: 'the data holds no order with this id',
  contact: 'the data holds no contact with this id, e-mail or client contact id',
  activity: 'the contact has no touches of this source',
} as const;

const RESPONSE_SCHEMA = { report: 'ReportResponse', items: 'ItemsResponse', validate: 'ValidateResponse' } as const;

/**
 * Documentation of every status a route can answer, added to the OpenAPI
 * document only (serialisation stays JSON.stringify). Every error is a problem.
 */
export function responsesFor(kind: OperationKind): Record<string, unknown> {
  const authenticated = kind !== 'health';
  const lookup = kind === 'order' || kind === 'contact' || kind === 'activity';
  const queries = kind === 'report' || kind === 'items' || kind === 'validate' || lookup;
  const ok =
    kind === 'health'
      ? { description: 'the server is up', content: { 'application/json': { schema: ref('Health') } } }
      : lookup
        ? { description: 'OK', content: { 'application/json': { schema: LOOKUP_SCHEMA[kind as keyof typeof LOOKUP_SCHEMA] } } }
        : {
            description: kind === 'validate' ? 'the dry run; findings, an invalid request included, are in render.errors and render.warnings' : 'OK',
            content: { 'application/json': { schema: ref(RESPONSE_SCHEMA[kind as keyof typeof RESPONSE_SCHEMA]) } },
          };
  const tagged = kind === 'report' || kind === 'items';
  return {
    200: tagged
      ? { ...ok, headers: { ETag: { type: 'string', description: 'the version of this answer; send it back as If-None-Match' } } }
      : ok,
    ...(tagged ? { 304: { description: 'Not Modified: the If-None-Match ETag still matches (the data has not been reloaded)' } } : {}),
    400: problemResponse(
      kind === 'validate'
        ? 'the body is not JSON, a token was sent in the query string, or the URL is malformed'
        : kind === 'health'
          ? 'a token was sent in the query string, or the URL is malformed'
          : 'an invalid parameter (errors[] names each), a token sent in the query string, or a malformed URL',
    ),
    ...(authenticated ? { 403: problemResponse('missing, invalid or expired token, or a plugin the data does not hold') } : {}),
    ...(kind === 'validate'
      ? {
          413: problemResponse('the body is over the body size limit, or the request over a limit such as the audience size'),
          415: problemResponse('the body is not application/json'),
        }
      : {}),
    ...(lookup ? { 404: problemResponse(LOOKUP_MISSING[kind as keyof typeof LOOKUP_MISSING]) } : {}),
    414: problemResponse('the URL is too long'),
    ...(authenticated ? { 422: problemResponse('the dataset cannot answer, e.g. exchange rates are missing for days of the period (the detail names the currency and days)') } : {}),
    ...(authenticated ? { 429: problemResponse("over the token's request rate limit", retryAfter) } : {}),
    431: problemResponse('the request headers are too large'),
    500: problemResponse('an unexpected failure; the server log has the details'),
    503: problemResponse(
      queries
        ? "the server is shutting down, the request ran over its time budget (query-timeout), or it is busy (busy: the plugin's queue is full, or the template renderers stayed busy for the whole budget)"
        : 'the server is shutting down',
      retryAfter,
    ),
    default: problemResponse('any other error, e.g. 404 for a path no operation serves or 405 for a method the path does not allow'),
  };
}

