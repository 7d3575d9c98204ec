/**
 * JSON Schemas of the query parameters the server validates (and documents in
 * /openapi.json), and the documented responses of each route.
 */
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
    country: list('country codes of the transactions'),
    currency: list('order currencies'),
    ...paging,
    q: { type: 'string', description: 'case-insensitive text in the row name or its smartflow name' },
    sort: {
      type: 'string',
      description: `comma-separated fields, "-" for descending (default -conversionsAmountWTax,name): ${REPORT_SORT_FIELDS.join(', ')}`,
    },
  },
} as const;

const itemsFilters = {
  contactId: id('only this contact'),
  orderId: id('only this order'),
  country: list('country codes'),
  currency: list('order currencies'),
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
    sourceId: id('only this source'),
    sourceType: { type: 'string', enum: [...SOURCE_TYPES], description: 'only this source type (with sourceId: both must match)' },
    smartflowId: id('only this smartflow'),
    deliveryId: id('only this delivery'),
    ...itemsFilters,
  },
} as const;

/** The per-source aliases: the items query with its source fixed by the path. */
export const ALIAS_QUERY = {
  type: 'object',
  additionalProperties: false,
  required: ['dateFrom', 'dateTo'],
  properties: { dateFrom: date('first day'), dateTo: date('last day'), ...itemsFilters },
} as const;

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ref('Problem') } },
});

/** Documentation of responses, added to the OpenAPI document only (serialisation stays JSON.stringify). */
export function responsesFor(schemaName: 'ItemsResponse' | 'ReportResponse' | 'ValidateResponse') {
  return {
    200: {
      description: schemaName === 'ValidateResponse' ? 'the dry run; findings are in render.errors and render.warnings' : 'OK',
      content: { 'application/json': { schema: ref(schemaName) } },
    },
    400: problemResponse('an invalid parameter; errors[] names each'),
    403: problemResponse('missing, invalid or expired token, or a plugin the data does not hold'),
  };
}
