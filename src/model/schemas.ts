/**
 * JSON Schemas of the query parameters the server validates (and documents in
 * /openapi.json), and the documented responses of each route.
 */
import type { ParameterProblem } from '../errors.js';
import { ITEM_ID_FILTERS } from './parameters.js';
import { DEFAULT_LIMIT, ITEMS_SORT_FIELDS, MAX_LIMIT, REPORT_SORT_FIELDS } from './query.js';
import { ref } from './shapes.js';
import { SOURCE_TYPES } from './types.js';

const date = (what: string) => ({ type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: `${what} (YYYY-MM-DD, UTC, inclusive)` });
const id = (description: string) => ({ type: 'string', description });
const list = (what: string) => ({ type: 'string', description: `comma-separated ${what}` });
const paging = {
  limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, description: `rows per page (default ${DEFAULT_LIMIT})` },
  offset: { type: 'integer', minimum: 0, description: 'rows to skip (default 0)' },
};

export const REPORT_QUERY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    dateFrom: date('first day; default: 29 days before dateTo'),
    dateTo: date('last day; default: today'),
    country: list('two-letter country codes of the transactions, any case (e.g. CZ,sk)'),
    currency: list('three-letter order currencies, any case (e.g. EUR,czk)'),
    ...paging,
    q: { type: 'string', description: 'case-insensitive text in the row name or its smartflow name' },
    sort: {
      type: 'string',
      description: `comma-separated fields, "-" for descending (default -conversionsAmountWTax,name): ${REPORT_SORT_FIELDS.join(', ')}`,
    },
  },
} as const;

/** The id filters of model/parameters.ts, each a string property (sourceType: one of the types). */
const idFilters = (alias: boolean) =>
  Object.fromEntries(
    ITEM_ID_FILTERS.filter((f) => !alias || f.alias).map((f) => [
      f.name,
      f.name === 'sourceType' ? { type: 'string', enum: [...SOURCE_TYPES], description: f.description } : id(f.description),
    ]),
  );

const itemsFilters = {
  country: list('two-letter country codes, any case (e.g. CZ,sk)'),
  currency: list('three-letter order currencies, any case (e.g. EUR,czk)'),
  ...paging,
  sort: { type: 'string', description: `one field, "-" for descending (default -datetime): ${ITEMS_SORT_FIELDS.join(', ')}` },
};

export const ITEMS_QUERY = {
  type: 'object',
  additionalProperties: false,
  required: ['dateFrom', 'dateTo'],
  properties: {
    dateFrom: date('first day'),
    dateTo: date('last day'),
    ...idFilters(false),
    ...itemsFilters,
  },
} as const;

/** The per-source aliases: the items query with its source fixed by the path. */
export const ALIAS_QUERY = {
  type: 'object',
  additionalProperties: false,
  required: ['dateFrom', 'dateTo'],
  properties: { dateFrom: date('first day'), dateTo: date('last day'), ...idFilters(true), ...itemsFilters },
} as const;

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

const text = { type: 'string' };
const nullableText = { type: 'string', nullable: true };
const touchSource = {
  type: 'object',
  required: ['type', 'id', 'name'],
  additionalProperties: false,
  properties: { type: text, id: text, name: text },
};

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
    503: problemResponse(queries ? 'the server is shutting down, or the query ran over its time budget' : 'the server is shutting down', retryAfter),
    default: problemResponse('any other error, e.g. 404 for a path no operation serves or 405 for a method the path does not allow'),
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Integer query parameters accept decimal digits only: the schema validator
 * would coerce "0x10", "1e3" or "1.0" to numbers. One problem per parameter
 * of `querySchema` typed integer whose value in `query` is any other text.
 */
export function nonDecimalIntegers(querySchema: unknown, query: unknown): ParameterProblem[] {
  if (!isRecord(querySchema) || !isRecord(querySchema.properties) || !isRecord(query)) return [];
  const problems: ParameterProblem[] = [];
  for (const [name, property] of Object.entries(querySchema.properties)) {
    const value = query[name];
    if (!isRecord(property) || property.type !== 'integer' || typeof value !== 'string' || /^[0-9]+$/.test(value)) continue;
    const { minimum, maximum } = property;
    const range =
      typeof minimum === 'number' && typeof maximum === 'number'
        ? ` from ${minimum} to ${maximum}`
        : typeof minimum === 'number'
          ? ` >= ${minimum}`
          : '';
    problems.push({ parameter: name, message: `must be a whole number${range} written in decimal digits (got ${JSON.stringify(value.slice(0, 40))})` });
  }
  return problems;
}
