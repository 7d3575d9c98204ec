/**
 * The interface's response shapes as JSON Schema (interface tables 2.1 to 2.7), in field
 * order. API mode checks responses against them, the server documents them in
 * /openapi.json, model/fields.ts takes the field names from them and model/types.ts
 * the TypeScript types of the responses. The literal types (`as const`) are what
 * lets types.ts read them.
 */

/** The kinds of source a conversion is attributed to (Source.type); model/types.ts re-exports it. */
export const SOURCE_TYPES = ['campaign', 'automation', 'smartflow'] as const;

const str = { type: 'string' } as const;
const nullableStr = { type: ['string', 'null'] } as const;
const timestamp = { type: 'string', format: 'date-time' } as const;
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;
const num = { type: 'number' } as const;
const int = { type: 'integer' } as const;
const strings = { type: 'array', items: { type: 'string' } } as const;
const object = <P extends Record<string, unknown>>(properties: P) => ({
  type: 'object' as const,
  required: Object.keys(properties),
  properties,
});
export const ref = <N extends string>(name: N) => ({ $ref: `#/components/schemas/${name}` as const });

/** The conversion figures of an AggregateRow and of each of its BreakdownRows, in field order. */
const CONVERSION_FIGURES = {
  conversionsAmountWoTax: num,
  conversionsAmountWTax: num,
  conversionsNumber: int,
};

/** The refund and gross figures of an AggregateRow and of each of its BreakdownRows, in field order. */
const REFUND_AND_GROSS_FIGURES = {
  refundsAmountWoTax: num,
  refundsAmountWTax: num,
  refundsNumber: int,
  grossConversionsAmountWoTax: num,
  grossConversionsAmountWTax: num,
  grossConversionsNumber: int,
};

/**
 * The figures of a set of transactions over their sources: an AggregateRow without its source
 * (a bucket of a series, the total of a period), in the AggregateRow's field order.
 */
const PERIOD_FIGURES = {
  firstConversionAt: nullableTimestamp,
  lastConversionAt: nullableTimestamp,
  ...CONVERSION_FIGURES,
  referenceCurrency: str,
  uniqueContacts: int,
  averageConversion: num,
  averageUniqueConversion: num,
  ...REFUND_AND_GROSS_FIGURES,
  breakdown: { type: 'array', items: ref('BreakdownRow') } as const,
};

/** The figures a comparison sets beside each other (the numbers of PERIOD_FIGURES, in its order). */
const COMPARED = {
  ...CONVERSION_FIGURES,
  uniqueContacts: int,
  averageConversion: num,
  averageUniqueConversion: num,
  ...REFUND_AND_GROSS_FIGURES,
};
export const COMPARED_FIGURES = Object.keys(COMPARED) as (keyof typeof COMPARED)[];

/** A Change per compared figure. */
const CHANGES = Object.fromEntries(COMPARED_FIGURES.map((f) => [f, ref('Change')])) as { [K in keyof typeof COMPARED]: ReturnType<typeof ref<'Change'>> };

const nullable = <S>(schema: S) => ({ oneOf: [schema, { type: 'null' as const }] }) as const;

/**
 * The header naming the version of the data an answer comes from (the server sends it with every
 * report and items answer, as paging.dataVersion), and that a request sends to be answered from
 * that version (412 data-version-changed when the server no longer holds it).
 */
export const DATA_VERSION_HEADER = 'Convx-Data-Version';

export const COMPONENT_SCHEMAS = {
  Paging: {
    type: 'object',
    required: ['start', 'count', 'totalCount'],
    properties: {
      start: int,
      count: int,
      totalCount: int,
      dataVersion: {
        type: 'string',
        description:
          'the version of the data this page comes from (also the Convx-Data-Version response header); send it back as the Convx-Data-Version request header to page on through the same data',
      },
    },
  } as const,
  Source: object({
    type: { type: 'string' as const, enum: [...SOURCE_TYPES] },
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
    isRefund: { type: 'boolean' } as const,
    attribution: ref('Attribution'),
    source: ref('Source'),
    activityUrl: str,
  }),
  BreakdownRow: object({
    currency: str,
    ...CONVERSION_FIGURES,
    averageConversion: num,
    ...REFUND_AND_GROSS_FIGURES,
    conversionAmountWoTaxReference: num,
    conversionAmountWTaxReference: num,
  }),
  AggregateRow: object({
    id: str,
    name: str,
    source: ref('Source'),
    sourceStartedAt: nullableTimestamp,
    ...PERIOD_FIGURES,
  }),
  /** The other period's side of a row, a bucket or a total (--compare, compareTo). */
  ComparedFigures: object(COMPARED),
  /** A figure's change from the other period to this one: this minus that (exact), and that ratio to the other side (null when the other side is 0). */
  Change: object({ absolute: num, relative: { type: ['number', 'null'] } as const }),
  Changes: object(CHANGES),
  /**
   * The comparison of a row, bucket or total: the other period (previous of equal length, or the
   * same dates a year before), the bucket it lines up with (a series; null elsewhere), its figures
   * (null where the row or bucket does not exist there) and the changes (null where either side is missing).
   */
  Comparison: object({
    dateFrom: str,
    dateTo: str,
    bucket: nullableStr,
    figures: nullable(ref('ComparedFigures')),
    change: nullable(ref('Changes')),
  }),
  /** The figures of a period over all its sources (convx total, GET /v1/conversions/total). */
  PeriodFigures: object(PERIOD_FIGURES),
  /**
   * One bucket of a series (convx trend, GET /v1/conversions/timeframes): its label in the time
   * zone (2024-03-01, 2024-03-01T13, 2024-W09, 2024-03), its first instant and the first instant
   * after it (UTC), and the figures of the transactions in it. Per source: the series it belongs to
   * (`campaign:k-1`, or `other` for the sources past --top) and that series' name.
   */
  TrendBucket: {
    type: 'object',
    // typed as the figures' names, so that series, seriesName and comparison stay optional in TrendBucket
    required: ['bucket', 'start', 'end', ...(Object.keys(PERIOD_FIGURES) as (keyof typeof PERIOD_FIGURES)[])],
    properties: { bucket: str, start: timestamp, end: timestamp, series: str, seriesName: str, ...PERIOD_FIGURES, comparison: ref('Comparison') },
  } as const,
  TimeframesResponse: object({
    dateFrom: str,
    dateTo: str,
    timeZone: str,
    interval: { type: 'string' as const, enum: ['hour', 'day', 'week', 'month'] },
    buckets: { type: 'array', items: ref('TrendBucket') } as const,
  }),
  TotalResponse: {
    type: 'object',
    required: ['dateFrom', 'dateTo', 'timeZone', 'total'],
    properties: { dateFrom: str, dateTo: str, timeZone: str, total: ref('PeriodFigures'), comparison: ref('Comparison') },
  } as const,
  ItemsResponse: object({ conversions: { type: 'array', items: ref('ConversionRecord') } as const, paging: ref('Paging') }),
  ReportResponse: object({ conversions: { type: 'array', items: ref('AggregateRow') } as const, paging: ref('Paging') }),
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
    channel: { type: 'string' as const, enum: ['email'] },
    audience: object({
      intended: int,
      suppressed: int,
      deliverable: int,
      suppressionBreakdown: object({ unsubscribed: int, invalidEmail: int, noConsent: int }),
    }),
    languages: { type: 'array', items: object({ language: str, recipients: int, assetRef: str }) },
    render: {
      type: 'object',
      required: ['samples', 'warnings', 'errors'],
      properties: {
        // html: only when options.preview asks for it (the -o html preview)
        samples: {
          type: 'array',
          items: { type: 'object', required: ['language', 'contactId', 'subject', 'htmlExcerpt'], properties: { language: str, contactId: str, subject: str, htmlExcerpt: str, textExcerpt: str, digest: str, html: str } },
        },
        warnings: { type: 'array', items: ref('Finding') },
        errors: { type: 'array', items: ref('Finding') },
        information: { type: 'array', items: ref('Finding'), description: 'findings that never fail a run; present only when there are some' },
      },
    },
  }),
  Health: {
    type: 'object' as const,
    required: ['status', 'loadedAt'],
    properties: {
      status: { type: 'string' as const, enum: ['ok'] },
      loadedAt: timestamp,
      reloadFailedAt: { ...timestamp, description: 'when the latest reload (SIGHUP) failed, the data of loadedAt still served; absent before any fails and once one succeeds' },
      dataVersion: {
        type: 'string' as const,
        description: 'the version of the data served now (as Convx-Data-Version names it), one dataset\'s; absent for a directory of plugin files, whose files have a version each',
      },
    },
  },
  ValidateRequest: {
    type: 'object',
    description: 'A dry run of an e-mail delivery: audience, suppression, languages, samples and findings. A body that does not match is answered 200 with invalid_request findings in render.errors.',
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
      headers: {
        type: 'object',
        description: 'the message headers; when given, List-Unsubscribe and List-Unsubscribe-Post are checked',
        additionalProperties: { type: 'string' },
      },
      options: {
        type: 'object',
        additionalProperties: false,
        properties: {
          sampleSize: { type: 'integer', minimum: 1, maximum: 20, description: 'samples per language (default 1)' },
          resolveOnly: { type: 'boolean', description: 'counts and languages only, no rendering' },
          clients: { ...strings, minItems: 1, description: 'mail clients whose support of the HTML is checked, as family.platform globs ("gmail.*", "outlook.windows"); default: the most used' },
          trackingDomains: { ...strings, minItems: 1, maxItems: 100, description: "the shop's own domains (subdomains count): their links must carry the tracking parameters (tracking lint)" },
          trackingParams: { ...strings, minItems: 1, maxItems: 100, description: 'the tracking parameters those links carry; default utm_source, utm_medium, utm_campaign (needs trackingDomains)' },
          preview: { type: 'boolean', description: 'each sample carries its whole rendered HTML as html (what convx validate -o html shows)' },
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
      requestedVersion: { type: 'string', description: 'for urn:convx:problem:data-version-changed: the Convx-Data-Version the request asked for' },
      currentVersion: { type: 'string', description: 'for urn:convx:problem:data-version-changed: the version of the data served now' },
      matchedBy: { type: 'string', enum: ['email', 'clientContactId'], description: 'for urn:convx:problem:ambiguous-key: what the key is of the contacts, an e-mail address or a client contact id' },
      contactIds: { ...strings, description: 'for urn:convx:problem:ambiguous-key: the contact ids of the contacts the key names, each to be looked up by' },
    },
  },
};

