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
      return { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: `${description} (YYYY-MM-DD, inclusive, a day of timeZone: UTC by default)` };
    case 'count': {
      const { min, max } = field(p, 'count')!;
      return { type: 'integer', minimum: min, ...(max === Number.MAX_SAFE_INTEGER ? {} : { maximum: max }), description };
    }
    case 'sort': {
      const fallback = field(p, 'sort')![operation]!.fallback;
      return { type: 'string', minLength: 1, description: `${description} (default ${fallback}): ${SORT_FIELDS[operation].join(', ')}` };
    }
    case 'sourceType':
      return { type: 'string', enum: [...SOURCE_TYPES], description };
    case 'zone':
      return { type: 'string', minLength: 1, default: 'UTC', description };
    case 'codes':
    case 'id':
    case 'text':
      // An empty value is refused (a 400 naming it, query.ts), never read as absent.
      return { type: 'string', minLength: 1, description };
    case 'choice': {
      const { values, fallback } = field(p, 'choice')!;
      return { type: 'string', enum: [...values], description: fallback === undefined ? description : `${description} (default ${fallback})` };
    }
    case 'switch':
      return { type: 'boolean', description: `${description} (default false)` };
  }
}

/** The query string of an operation, as the table says (a per-source alias without the source filters its path fixes). */
function querySchema(operation: Operation, alias = false, without: readonly string[] = []) {
  const taken = parameters(operation).filter(
    (p) => !field(p, 'pathOnly') && !(alias && field(p, 'source') && !field(p, 'inAlias')) && !without.includes(p.name),
  );
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
export const TREND_QUERY = querySchema('trend');
/** GET /v1/conversions/daily: a series whose interval is a day. */
export const DAILY_QUERY = querySchema('trend', false, ['interval']);
export const TOTAL_QUERY = querySchema('total');

/** Response headers in fastify's form (@fastify/swagger turns each into an OpenAPI header object). */
const retryAfter = {
  'Retry-After': { type: 'integer', minimum: 1, description: 'seconds to wait before trying again' },
};

/** The version of the data an answer comes from (report and items answers, and their 412). */
const dataVersionHeader = {
  'Convx-Data-Version': { type: 'string', description: 'the version of the data this answer comes from (as paging.dataVersion); 412: the version served now' },
};

/**
 * The request headers of the report and items routes: Convx-Data-Version pins a request to a data
 * version (documented only, like the query parameters).
 */
export const PINNED_HEADERS = {
  type: 'object',
  properties: {
    'Convx-Data-Version': {
      type: 'string',
      description:
        'answer from this version of the data (paging.dataVersion of an earlier page), so that paging never mixes two versions: ' +
        'the server keeps the data a reload replaced answerable for its --version-grace period (60 s by default); ' +
        'a version it no longer holds is a 412 data-version-changed problem: start paging again',
    },
  },
} as const;

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

/** What an id matched, or one near it: an order, a contact, a source, a smartflow or a delivery. */
const idMatch = {
  type: 'object',
  required: ['kind', 'by', 'id', 'type', 'name', 'smartflowId'],
  additionalProperties: false,
  properties: {
    kind: { type: 'string', enum: ['order', 'contact', 'source', 'smartflow', 'delivery'] },
    by: {
      type: 'string',
      enum: ['id', 'email', 'clientContactId', 'name', 'campaignId', 'laterEmail', 'laterClientContactId'],
      description:
        "what of it the id matched: its id, a contact's e-mail (any case) or client contact id, a source's name or campaign id; laterEmail, laterClientContactId: the e-mail or client contact id of a later row of the contact's, which no look-up reads (a contact is its first row): where the key is, not a contact it finds",
    },
    id: { ...text, description: 'the id to look it up by: the order, contact, source, smartflow or delivery id' },
    type: { ...nullableText, description: "a source's type (a smartflow's and a delivery's: smartflow)" },
    name: { ...nullableText, description: "its name: a source's, smartflow's or delivery's, a contact's first name and surname (else e-mail)" },
    smartflowId: { ...nullableText, description: "a delivery's smartflow" },
  },
} as const;

/** GET /v1/ids/{id}: what an id names in the data, else the ids nearest it. */
export const IDS_RESPONSE = {
  type: 'object',
  required: ['id', 'matches', 'nearest', 'sources'],
  additionalProperties: false,
  properties: {
    id: { ...text, description: 'the id looked for, surrounding blanks removed' },
    matches: { type: 'array', items: idMatch, description: 'everything the id names exactly (an e-mail in any case)' },
    nearest: { type: 'array', items: idMatch, description: 'when the id names nothing: the known ids nearest it (any case, a few edits away), at most three of each kind, nearest first' },
    sources: { type: 'array', items: idMatch, description: 'when the id names nothing: the first eight sources by type and id, to name when none is near' },
  },
} as const;

/** What each route does, for its documented responses. */
export type OperationKind = 'report' | 'items' | 'trend' | 'total' | 'validate' | 'health' | 'order' | 'contact' | 'activity' | 'ids';

const LOOKUP_SCHEMA = { order: ORDER_RESPONSE, contact: CONTACT_RESPONSE, activity: ACTIVITY_RESPONSE, ids: IDS_RESPONSE } as const;
const LOOKUP_MISSING = {
  order: 'the data holds no order with this id',
  contact: 'the data holds no contact with this id, e-mail or client contact id',
  activity: 'the contact has no touches of this source',
} as const;

const RESPONSE_SCHEMA = { report: 'ReportResponse', items: 'ItemsResponse', trend: 'TimeframesResponse', total: 'TotalResponse', validate: 'ValidateResponse' } as const;

/** The operations whose answers carry an ETag and the data version (report, items, a series, a total). */
const isTagged = (kind: OperationKind) => kind === 'report' || kind === 'items' || kind === 'trend' || kind === 'total';

/**
 * Documentation of every status a route can answer, added to the OpenAPI
 * document only (serialisation stays JSON.stringify). Every error is a problem.
 */
export function responsesFor(kind: OperationKind): Record<string, unknown> {
  const authenticated = kind !== 'health';
  const lookup = kind === 'order' || kind === 'contact' || kind === 'activity' || kind === 'ids';
  const queries = isTagged(kind) || kind === 'validate' || lookup;
  const ok =
    kind === 'health'
      ? { description: 'the server is up', content: { 'application/json': { schema: ref('Health') } } }
      : lookup
        ? { description: 'OK', content: { 'application/json': { schema: LOOKUP_SCHEMA[kind as keyof typeof LOOKUP_SCHEMA] } } }
        : {
            description: kind === 'validate' ? 'the dry run; findings, an invalid request included, are in render.errors and render.warnings' : 'OK',
            content: { 'application/json': { schema: ref(RESPONSE_SCHEMA[kind as keyof typeof RESPONSE_SCHEMA]) } },
          };
  const tagged = isTagged(kind);
  return {
    200: tagged
      ? { ...ok, headers: { ETag: { type: 'string', description: 'the version of this answer; send it back as If-None-Match' }, ...dataVersionHeader } }
      : ok,
    ...(tagged ? { 304: { description: 'Not Modified: the If-None-Match ETag still matches (the same request on the same data version)' } } : {}),
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
    ...(lookup && kind !== 'ids' ? { 404: problemResponse(LOOKUP_MISSING[kind as keyof typeof LOOKUP_MISSING]) } : {}),
    ...(kind === 'contact'
      ? { 409: problemResponse('ambiguous-key: the e-mail address or client contact id is that of several contacts (contactIds names them, matchedBy says which it is): look one up by its contact id') }
      : {}),
    // A server of a dataset of contacts and assets only (delivery validation): the reports have nothing to say.
    ...(tagged ? { 404: problemResponse('no-orders: the dataset holds no orders, so it has no conversions to report') } : {}),
    ...(tagged
      ? {
          412: problemResponse(
            'data-version-changed: the request was pinned (Convx-Data-Version) to a data version the server no longer holds; the detail, requestedVersion and currentVersion name both versions: start paging again',
            dataVersionHeader,
          ),
        }
      : {}),
    414: problemResponse('the URL is too long'),
    ...(authenticated ? { 422: problemResponse('the dataset cannot answer, e.g. exchange rates are missing for days of the period (the detail names the currency and days)') } : {}),
    ...(authenticated ? { 429: problemResponse("over the token's request rate limit", retryAfter) } : {}),
    431: problemResponse('the request headers are too large'),
    500: problemResponse('an unexpected failure; the server log has the details'),
    503: problemResponse(
      queries
        ? "the server is shutting down, the request ran over its time budget (query-timeout), it is busy (busy: the plugin's queue is full, or the template renderers stayed busy for the whole budget), or the plugin's data cannot be opened (plugin-unavailable: a server of a directory of plugin files whose file for the plugin is not one convx wrote for it; the server's log says why)"
        : 'the server is shutting down',
      retryAfter,
    ),
    default: problemResponse('any other error, e.g. 404 for a path no operation serves or 405 for a method the path does not allow'),
  };
}


/**
 * The request headers an operation documents (HTTP conventions of the server): X-Request-Id
 * on every one, If-None-Match and Convx-Data-Version on those whose answers carry an ETag.
 */
export function requestHeadersFor(kind: OperationKind): { headers?: Record<string, unknown> } {
  const tagged = isTagged(kind);
  return {
    headers: {
      type: 'object',
      properties: {
        'X-Request-Id': {
          type: 'string',
          maxLength: 128,
          description: "the request's id, echoed in the answer and logged (1 to 128 visible ASCII characters; any other value is replaced by a new id)",
        },
        ...(tagged ? { 'If-None-Match': { type: 'string', description: 'an ETag of an earlier answer: a 304 without a body while it still matches' } } : {}),
        ...(tagged ? PINNED_HEADERS.properties : {}),
      },
    },
  };
}

const CONVENTION_HEADERS = {
  'X-Request-Id': { type: 'string', description: "the request's id: the client's X-Request-Id when sane, else a new one; the access log names it" },
};
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': { type: 'integer', minimum: 1, description: "the token's requests per minute, also the burst (absent when the server has no rate limit)" },
  'RateLimit-Remaining': { type: 'integer', minimum: 0, description: 'the requests left now' },
  'RateLimit-Reset': { type: 'integer', minimum: 0, description: 'seconds until the full quota is available again' },
};

/**
 * The responses of responsesFor with the headers every answer carries (X-Request-Id; the
 * RateLimit-* fields on an authenticated operation's answers), and for a tagged operation
 * the 304 as it is: no body, the ETag of the representation the client holds.
 */
export function withConventionHeaders(kind: OperationKind, responses: Record<string, unknown>): Record<string, unknown> {
  const authenticated = kind !== 'health';
  const tagged = isTagged(kind);
  const extra: Record<string, unknown> = { ...CONVENTION_HEADERS, ...(authenticated ? RATE_LIMIT_HEADERS : {}) };
  const withHeaders: Record<string, unknown> = Object.fromEntries(
    Object.entries(responses).map(([status, response]) => {
      const r = response as { headers?: Record<string, unknown> };
      return [status, { ...r, headers: { ...(r.headers ?? {}), ...extra } }];
    }),
  );
  if (tagged) {
    // Kept from responsesFor: any header it declares for the 304; replaced: a body (a 304 has none).
    const { content: _none, ...declared } = (withHeaders['304'] ?? {}) as { content?: unknown; headers?: Record<string, unknown> };
    withHeaders['304'] = {
      ...declared,
      // type null: @fastify/swagger declares a response without content
      type: 'null',
      description: 'Not Modified, without a body: the If-None-Match ETag still matches (the same request on the same data version); it does not count against the rate limit',
      headers: {
        ...(declared.headers ?? {}),
        ETag: { type: 'string', description: 'the tag of the representation the 200 would have (W/ when it would be compressed)' },
        ...extra,
      },
    };
  }
  return withHeaders;
}
