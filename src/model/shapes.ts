/**
 * The interface's response shapes as JSON Schema (interface tables 2.1 to 2.7), in field
 * order. API mode checks responses against them, the server documents them in
 * /openapi.json, and model/fields.ts takes the field names from them.
 */
import { SOURCE_TYPES } from './types.js';

const str = { type: 'string' };
const nullableStr = { type: ['string', 'null'] };
const timestamp = { type: 'string', format: 'date-time' };
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' };
const num = { type: 'number' };
const int = { type: 'integer' };
const strings = { type: 'array', items: { type: 'string' } };
const object = (properties: Record<string, unknown>) => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
});
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

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
  Health: object({ status: { type: 'string', enum: ['ok'] }, loadedAt: timestamp }),
  ValidateRequest: {
    type: 'object',
    description: 'A dry run of an e-mail delivery (DESIGN.md section 5). A body that does not match is answered 200 with invalid_request findings in render.errors.',
    required: ['audience', 'assets'],
    additionalProperties: false,
    properties: {
      audience: {
        type: 'object',
        description: 'at least one of lists or contactIds',
        additionalProperties: false,
        properties: {
          lists: strings,
          contactIds: strings,
          excludeLists: strings,
          languages: strings,
          countries: strings,
        },
      },
      assets: { type: 'array', minItems: 1, items: { oneOf: [ref('AssetById'), ref('InlineAsset')] } },
      variables: { type: 'object', description: 'merge values available to templates beside contact', additionalProperties: true },
      permId: str,
      name: str,
      tags: strings,
      options: {
        type: 'object',
        additionalProperties: false,
        properties: {
          sampleSize: { type: 'integer', minimum: 1, maximum: 20, description: 'samples per language (default 1)' },
          resolveOnly: { type: 'boolean', description: 'counts and languages only, no rendering' },
        },
      },
    },
  },
  AssetById: { type: 'object', required: ['assetId'], additionalProperties: false, properties: { assetId: { type: 'string', minLength: 1 } } },
  InlineAsset: {
    type: 'object',
    required: ['html'],
    additionalProperties: false,
    properties: { language: nullableStr, subject: nullableStr, html: { type: 'string', minLength: 1 }, text: nullableStr, preheader: nullableStr },
  },
  Problem: {
    type: 'object',
    description: 'RFC 9457 problem details; type is a stable urn:convx:problem:* URN',
    required: ['type', 'title', 'status', 'detail'],
    properties: {
      type: str,
      title: str,
      status: int,
      detail: str,
      errors: { type: 'array', items: object({ parameter: str, message: str }) },
      limit: { type: 'string', description: 'for urn:convx:problem:limit-exceeded: the name of the limit' },
      summary: { type: 'string', description: 'for urn:convx:problem:data-error: what the data cannot answer, without the list in details' },
      details: { type: 'array', items: str, description: 'for urn:convx:problem:data-error: each missing rate or bad value, one per entry' },
    },
  },
};

