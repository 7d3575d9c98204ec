/** Checks that a response has the interface's shape before anything is printed from it. */
import { Ajv, type ValidateFunction } from 'ajv';
import type { ContactReport, IdResolution, OrderLookup } from '../backend.js';
import { ApiError } from '../errors.js';
import { CONTACT_RESPONSE, IDS_RESPONSE, ORDER_RESPONSE } from '../model/schemas.js';
import { COMPONENT_SCHEMAS, ref } from '../model/shapes.js';
import type { ComparedAggregateRow, ItemsResponse, ReportResponse, TimeframesResponse, TotalResponse } from '../model/types.js';
import type { ValidateResponse } from '../model/validation.js';

/** What a row, bucket or total of an answer to compareTo carries: its comparison. */
const COMPARED = { type: 'object', required: ['comparison'], properties: { comparison: ref('Comparison') } } as const;

/** The answers API mode checks, by what they are: the schema and how a message names it. */
const RESPONSES = {
  ItemsResponse: { schema: ref('ItemsResponse'), what: 'a conversions/items response' },
  ReportResponse: { schema: ref('ReportResponse'), what: 'a conversions response' },
  TimeframesResponse: { schema: ref('TimeframesResponse'), what: 'a conversions/timeframes response' },
  TotalResponse: { schema: ref('TotalResponse'), what: 'a conversions/total response' },
  // compareTo sent: every row, bucket or the total has its comparison
  ComparedReportResponse: {
    schema: { allOf: [ref('ReportResponse'), { type: 'object', properties: { conversions: { type: 'array', items: COMPARED } } }] },
    what: 'a compared conversions response',
  },
  ComparedTimeframesResponse: {
    schema: { allOf: [ref('TimeframesResponse'), { type: 'object', properties: { buckets: { type: 'array', items: COMPARED } } }] },
    what: 'a compared conversions/timeframes response',
  },
  ComparedTotalResponse: { schema: { allOf: [ref('TotalResponse'), COMPARED] }, what: 'a compared conversions/total response' },
  ValidateResponse: { schema: ref('ValidateResponse'), what: 'a delivery validation response' },
  OrderLookup: { schema: ORDER_RESPONSE, what: 'an order look-up' },
  ContactReport: { schema: CONTACT_RESPONSE, what: 'a contact look-up' },
  IdResolution: { schema: IDS_RESPONSE, what: 'an id look-up' },
} as const;

/** The type each answer has once checked. */
interface Responses {
  ItemsResponse: ItemsResponse;
  ReportResponse: ReportResponse;
  TimeframesResponse: TimeframesResponse;
  TotalResponse: TotalResponse;
  ComparedReportResponse: ReportResponse & { conversions: ComparedAggregateRow[] };
  ComparedTimeframesResponse: TimeframesResponse;
  ComparedTotalResponse: TotalResponse;
  ValidateResponse: ValidateResponse;
  OrderLookup: OrderLookup;
  ContactReport: ContactReport;
  IdResolution: IdResolution;
}
type ResponseName = keyof typeof RESPONSES & keyof Responses;

/**
 * The shapes API mode accepts: the interface's, except that a source's type is any string. The
 * interface says the list of source types is open: an upstream server may attribute to a kind
 * of source convx does not know, and convx prints it as it is. convx serve sends only
 * SOURCE_TYPES, and its own documents (/openapi.json) keep that enum.
 */
const ACCEPTED_SCHEMAS = {
  ...COMPONENT_SCHEMAS,
  Source: {
    ...COMPONENT_SCHEMAS.Source,
    properties: { ...COMPONENT_SCHEMAS.Source.properties, type: { type: 'string', description: 'campaign, automation, smartflow, or a kind convx does not know' } },
  },
};

let ajv: Ajv | undefined;
const compiled = new Map<ResponseName, ValidateFunction>();

function validator(name: ResponseName): ValidateFunction {
  ajv ??= new Ajv({ strict: false, validateFormats: false, allErrors: false });
  if (!compiled.has(name)) {
    compiled.set(name, ajv.compile({ ...RESPONSES[name].schema, components: { schemas: ACCEPTED_SCHEMAS } }));
  }
  return compiled.get(name)!;
}

/** "/conversions/3/source/type" -> "conversions[3].source.type" */
function where(instancePath: string): string {
  return instancePath
    .split('/')
    .filter(Boolean)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')
    .replace(/^\./, '') || 'the body';
}

export function checkShape<N extends ResponseName>(name: N, body: unknown, url: string): Responses[N] {
  const validate = validator(name);
  // what the schema accepts has the type read from that schema
  if (validate(body)) return body as Responses[N];
  const error = validate.errors?.[0];
  const detail = error
    ? `${where(error.instancePath)} ${error.message ?? 'is invalid'}${error.keyword === 'required' ? '' : ` (got ${JSON.stringify(valueAt(body, error.instancePath))?.slice(0, 60)})`}`
    : 'unknown problem';
  throw new ApiError(`the API's answer to ${url} is not ${RESPONSES[name].what}: ${detail}`);
}

function valueAt(body: unknown, instancePath: string): unknown {
  let value = body;
  for (const part of instancePath.split('/').filter(Boolean)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
