/** Checks that a response has the interface's shape before anything is printed from it. */
import { Ajv, type ValidateFunction } from 'ajv';
import { ApiError } from '../errors.js';
import { COMPONENT_SCHEMAS } from '../model/shapes.js';
import type { ItemsResponse, ReportResponse } from '../model/types.js';
import type { ValidateResponse } from '../model/validation.js';

type ResponseName = 'ItemsResponse' | 'ReportResponse' | 'ValidateResponse';

let ajv: Ajv | undefined;
const compiled = new Map<ResponseName, ValidateFunction>();

function validator(name: ResponseName): ValidateFunction {
  ajv ??= new Ajv({ strict: false, validateFormats: false, allErrors: false });
  if (!compiled.has(name)) {
    compiled.set(name, ajv.compile({ $ref: `#/components/schemas/${name}`, components: { schemas: COMPONENT_SCHEMAS } }));
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

export function checkShape(name: 'ItemsResponse', body: unknown, url: string): ItemsResponse;
export function checkShape(name: 'ReportResponse', body: unknown, url: string): ReportResponse;
export function checkShape(name: 'ValidateResponse', body: unknown, url: string): ValidateResponse;
export function checkShape(name: ResponseName, body: unknown, url: string): unknown {
  const validate = validator(name);
  if (validate(body)) return body;
  const error = validate.errors?.[0];
  const detail = error
    ? `${where(error.instancePath)} ${error.message ?? 'is invalid'}${error.keyword === 'required' ? '' : ` (got ${JSON.stringify(valueAt(body, error.instancePath))?.slice(0, 60)})`}`
    : 'unknown problem';
  const what = { ItemsResponse: 'conversions/items', ReportResponse: 'conversions', ValidateResponse: 'delivery validation' }[name];
  throw new ApiError(`the API's answer to ${url} is not a ${what} response: ${detail}`);
}

function valueAt(body: unknown, instancePath: string): unknown {
  let value = body;
  for (const part of instancePath.split('/').filter(Boolean)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
