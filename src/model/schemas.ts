/**
 * JSON Schemas of the interface: the query parameters the server validates, and
 * the response shapes API mode checks what it receives against. The server's
 * /openapi.json is generated from the same objects.
 */
import { DEFAULT_LIMIT, ITEMS_SORT_FIELDS, MAX_LIMIT, REPORT_SORT_FIELDS } from './query.js';
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

const str = { type: 'string' };
const nullableStr = { type: ['string', 'null'] };
const timestamp = { type: 'string', format: 'date-time' };
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' };
const num = { type: 'number' };
const int = { type: 'integer' };
const object = (properties: Record<string, unknown>) => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
});
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

export const COMPONENT_SCHEMAS = {
  Paging: object({ start: int, count: int, totalCount: int }),
  Source: object({
    type: { type: 'string', enum: [...SOURCE_TYPES] },
    id: str,
    name: str,
    campaignId: str,
    smartflowId: nullableStr,
    smartflowName: nullableStr,
    deliveryId: nullableStr,
    deliveryName: nullableStr,
    detailUrl: str,
  }),
  Attribution: object({ touch: str, datetime: timestamp, hoursToConversion: num, model: str, windowDays: int }),
  ConversionRecord: object({
    contactId: str,
    clientContactId: nullableStr,
    datetime: timestamp,
    orderId: str,
    firstName: nullableStr,
    surname: nullableStr,
    conversionsAmount: num,
    conversionsCurrency: str,
    conversionsReferenceAmount: num,
    referenceCurrency: str,
    country: nullableStr,
    isRefund: { type: 'boolean' },
    attribution: ref('Attribution'),
    source: ref('Source'),
    activityUrl: str,
  }),
  BreakdownRow: object({
    currency: str,
    conversionsAmountWoTax: num,
    conversionsAmountWTax: num,
    conversionsNumber: int,
    averageConversion: num,
    refundsAmountWoTax: num,
    refundsAmountWTax: num,
    refundsNumber: int,
    grossConversionsAmountWoTax: num,
    grossConversionsAmountWTax: num,
    grossConversionsNumber: int,
    conversionAmountWoTaxReference: num,
    conversionAmountWTaxReference: num,
  }),
  AggregateRow: object({
    id: str,
    name: str,
    source: ref('Source'),
    sourceStartedAt: nullableTimestamp,
    firstConversionAt: nullableTimestamp,
    lastConversionAt: nullableTimestamp,
    conversionsAmountWoTax: num,
    conversionsAmountWTax: num,
    conversionsNumber: int,
    referenceCurrency: str,
    uniqueContacts: int,
    averageConversion: num,
    averageUniqueConversion: num,
    refundsAmountWoTax: num,
    refundsAmountWTax: num,
    refundsNumber: int,
    grossConversionsAmountWoTax: num,
    grossConversionsAmountWTax: num,
    grossConversionsNumber: int,
    breakdown: { type: 'array', items: ref('BreakdownRow') },
  }),
  ItemsResponse: object({ conversions: { type: 'array', items: ref('ConversionRecord') }, paging: ref('Paging') }),
  ReportResponse: object({ conversions: { type: 'array', items: ref('AggregateRow') }, paging: ref('Paging') }),
  Finding: {
    type: 'object',
    required: ['code', 'message'],
    properties: {
      code: str,
      message: str,
      assetRef: str,
      language: str,
      field: str,
      count: int,
      contactId: str,
      line: int,
    },
  },
  ValidateResponse: object({
    channel: { type: 'string', enum: ['email'] },
    audience: object({
      intended: int,
      suppressed: int,
      deliverable: int,
      suppressionBreakdown: object({ unsubscribed: int, invalidEmail: int, noConsent: int }),
    }),
    languages: { type: 'array', items: object({ language: str, recipients: int, assetRef: str }) },
    render: object({
      samples: { type: 'array', items: object({ language: str, contactId: str, subject: str, htmlExcerpt: str }) },
      warnings: { type: 'array', items: ref('Finding') },
      errors: { type: 'array', items: ref('Finding') },
    }),
  }),
  Problem: {
    type: 'object',
    required: ['type', 'title', 'status', 'detail'],
    properties: {
      type: str,
      title: str,
      status: int,
      detail: str,
      errors: { type: 'array', items: object({ parameter: str, message: str }) },
    },
  },
};

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
