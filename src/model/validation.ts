/** The delivery validation request and response (docs/validation.md: request, response and checks). */

export interface AudienceInput {
  lists?: string[];
  contactIds?: string[];
  excludeLists?: string[];
  languages?: string[];
  countries?: string[];
}

export interface InlineAsset {
  language?: string;
  subject?: string;
  html?: string;
  text?: string;
  preheader?: string;
}

/** An element of the request's `assets`: a stored asset by id, or one given inline. */
export type AssetInput = { assetId: string } | InlineAsset;

export interface Finding {
  code: string;
  message: string;
  assetRef?: string;
  language?: string;
  field?: string;
  count?: number;
  contactId?: string;
  line?: number;
  /** The file a finding's line is in (a template loaded from a file, the request file), when it is one. */
  file?: string;
}

export interface ValidateResponse {
  channel: 'email';
  audience: {
    intended: number;
    suppressed: number;
    deliverable: number;
    suppressionBreakdown: { unsubscribed: number; invalidEmail: number; noConsent: number };
  };
  languages: { language: string; recipients: number; assetRef: string }[];
  render: {
    samples: { language: string; contactId: string; subject: string; htmlExcerpt: string }[];
    warnings: Finding[];
    errors: Finding[];
  };
}

/**
 * Characters of a sample's subject (RFC 5322's line limit); a longer one is cut
 * and ends in "…", as the HTML excerpt of a sample (HTML_EXCERPT_CHARS) is.
 */
export const SAMPLE_SUBJECT_CHARS = 998;
/** Characters of a sample's HTML excerpt. */
export const HTML_EXCERPT_CHARS = 400;

export const DEFAULT_SAMPLE_SIZE = 1;
export const MAX_SAMPLE_SIZE = 20;
/** Gmail clips messages whose HTML is larger than this. */
export const GMAIL_CLIP_BYTES = 102 * 1024;
/** The language reported for recipients without one. */
export const NO_LANGUAGE = 'und';
/**
 * The most entries a request's audience may list, counted over lists,
 * contactIds, excludeLists, languages and countries together; above it the
 * request is refused (TooLargeError: HTTP 413, exit 2).
 */
export const MAX_AUDIENCE_IDS = 100_000;
/** The most assets a request may give (one per language is the use). */
export const MAX_ASSETS = 100;

/** Every check, for CI reports that list passed checks too (junit). */
export const CHECKS = {
  errors: [
    'invalid_request',
    'asset_not_found',
    'duplicate_asset_language',
    'template_syntax',
    'missing_subject',
    'no_asset_for_language',
    'no_recipients',
    'render_failed',
    'template_file_access',
    'render_limit_exceeded',
    // tracking lint (docs/validation.md, "Tracking lint"): links to the shop without or with other tracking parameters
    'tracking_param_missing',
    'tracking_param_mismatch',
  ],
  warnings: [
    'unresolved_variable',
    'missing_unsubscribe_link',
    'image_missing_alt',
    'insecure_link',
    'empty_link',
    'placeholder_link',
    'relative_link',
    'html_too_large',
    'missing_text_part',
    'language_fallback',
    'duplicate_email',
    // tracking lint (docs/validation.md, "Tracking lint"): the warning of links that disagree
    'tracking_inconsistent',
  ],
} as const;

export interface NormalizedRequest {
  audience: Required<Pick<AudienceInput, 'lists' | 'contactIds' | 'excludeLists'>> & Pick<AudienceInput, 'languages' | 'countries'>;
  assets: AssetInput[];
  variables: Record<string, unknown>;
  sampleSize: number;
  resolveOnly: boolean;
  /** The delivery's ids, which the tracking lint compares utm_campaign with. */
  permId?: string;
  name?: string;
  /** The tracking lint's options (checkTrackingOptions): the shop's domains (lowercase) and the parameters its links carry. */
  trackingDomains?: string[];
  trackingParams?: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

type Bad = (field: string, message: string) => void;

const AUDIENCE_LISTS = ['lists', 'contactIds', 'excludeLists', 'languages', 'countries'];
const INLINE_ASSET_FIELDS = ['language', 'subject', 'html', 'text', 'preheader'];
const REQUEST_FIELDS = ['audience', 'assets', 'variables', 'permId', 'name', 'tags', 'options'];

/** The audience's lists, each an array of strings; the problems of any other shape. */
function checkAudience(audience: unknown, bad: Bad): Record<string, string[] | undefined> {
  const lists: Record<string, string[] | undefined> = {};
  if (!isObject(audience)) {
    bad('audience', 'is required: an object with lists or contactIds');
    return lists;
  }
  for (const key of AUDIENCE_LISTS) {
    const value = audience[key];
    if (value === undefined) continue;
    if (!isStringArray(value)) bad(`audience.${key}`, 'must be an array of strings');
    else lists[key] = value;
  }
  for (const key of Object.keys(audience)) {
    if (!AUDIENCE_LISTS.includes(key)) bad(`audience.${key}`, 'is not a field of audience');
  }
  if (!lists.lists?.length && !lists.contactIds?.length) bad('audience', 'needs at least one of lists or contactIds');
  return lists;
}

/** One asset: by id (only assetId) or inline (known string fields, html required). */
function checkAsset(asset: unknown, at: string, bad: Bad): void {
  if (!isObject(asset)) return bad(at, 'must be an object');
  if ('assetId' in asset) {
    if (typeof asset.assetId !== 'string' || asset.assetId === '') bad(`${at}.assetId`, 'must be a non-empty string');
    if (Object.keys(asset).length > 1) bad(at, 'an asset by id has only assetId');
    return;
  }
  for (const key of Object.keys(asset)) {
    if (!INLINE_ASSET_FIELDS.includes(key)) bad(`${at}.${key}`, 'is not a field of an inline asset');
    else if (asset[key] !== null && asset[key] !== undefined && typeof asset[key] !== 'string') bad(`${at}.${key}`, 'must be a string');
  }
  if (typeof asset.html !== 'string' || asset.html === '') bad(`${at}.html`, 'is required for an inline asset');
}

/** The options: a sample size within its bounds and resolveOnly, their defaults when left out. */
function checkOptions(options: unknown, bad: Bad): { sampleSize: number; resolveOnly: boolean; trackingDomains?: string[]; trackingParams?: string[] } {
  const checked = { sampleSize: DEFAULT_SAMPLE_SIZE, resolveOnly: false };
  if (options === undefined) return checked;
  if (!isObject(options)) {
    bad('options', 'must be an object');
    return checked;
  }
  if (options.sampleSize !== undefined) {
    if (!Number.isInteger(options.sampleSize) || (options.sampleSize as number) < 1 || (options.sampleSize as number) > MAX_SAMPLE_SIZE) {
      bad('options.sampleSize', `must be a whole number from 1 to ${MAX_SAMPLE_SIZE}`);
    } else checked.sampleSize = options.sampleSize as number;
  }
  if (options.resolveOnly !== undefined) {
    if (typeof options.resolveOnly !== 'boolean') bad('options.resolveOnly', 'must be true or false');
    else checked.resolveOnly = options.resolveOnly;
  }
  return { ...checked, ...checkTrackingOptions(options, bad) };
}

/** The most entries of options.trackingDomains and of options.trackingParams. */
export const MAX_TRACKING_ENTRIES = 100;

/** Why a list of the tracking lint is not valid (`key`: trackingDomains or trackingParams), else undefined. */
export function trackingOptionProblem(key: 'trackingDomains' | 'trackingParams', value: unknown): string | undefined {
  if (!isStringArray(value)) return 'must be an array of strings';
  if (value.length > MAX_TRACKING_ENTRIES) return `may list at most ${MAX_TRACKING_ENTRIES}`;
  const bad =
    key === 'trackingDomains'
      ? value.find((d) => !/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(d))
      : value.find((p) => !/^[^\s&=#]{1,100}$/.test(p));
  if (bad === undefined) return undefined;
  return key === 'trackingDomains'
    ? `"${bad}" is not a domain name (shop.example.com: no scheme, path or port)`
    : `"${bad}" is not a query parameter name`;
}

/** The tracking lint's options (docs/validation.md, "Tracking lint"), when given. */
function checkTrackingOptions(options: Record<string, unknown>, bad: Bad): { trackingDomains?: string[]; trackingParams?: string[] } {
  const checked: { trackingDomains?: string[]; trackingParams?: string[] } = {};
  for (const key of ['trackingDomains', 'trackingParams'] as const) {
    if (options[key] === undefined) continue;
    const problem = trackingOptionProblem(key, options[key]);
    if (problem) bad(`options.${key}`, problem);
    else checked[key] = key === 'trackingDomains' ? (options[key] as string[]).map((d) => d.toLowerCase()) : (options[key] as string[]);
  }
  return checked;
}

/** Checks a request body; every problem becomes an invalid_request finding naming the field. */
export function normalizeRequest(body: unknown): { request?: NormalizedRequest; problems: Finding[] } {
  const problems: Finding[] = [];
  const bad: Bad = (field, message) => problems.push({ code: 'invalid_request', message: `${field}: ${message}`, field });
  if (!isObject(body)) {
    bad('body', 'the request must be a JSON object');
    return { problems };
  }
  const lists = checkAudience(body.audience, bad);
  const assets = body.assets;
  if (!Array.isArray(assets) || assets.length === 0) bad('assets', 'is required: a non-empty array');
  else assets.forEach((asset, i) => checkAsset(asset, `assets[${i}]`, bad));
  if (body.variables !== undefined && !isObject(body.variables)) bad('variables', 'must be an object');
  if (body.tags !== undefined && !isStringArray(body.tags)) bad('tags', 'must be an array of strings');
  for (const key of ['permId', 'name'] as const) {
    if (body[key] !== undefined && typeof body[key] !== 'string') bad(key, 'must be a string');
  }
  const { sampleSize, resolveOnly, ...tracking } = checkOptions(body.options, bad);
  for (const key of Object.keys(body)) if (!REQUEST_FIELDS.includes(key)) bad(key, 'is not a field of the request');
  if (problems.length) return { problems };
  return {
    request: {
      audience: {
        lists: lists.lists ?? [],
        contactIds: lists.contactIds ?? [],
        excludeLists: lists.excludeLists ?? [],
        ...(lists.languages ? { languages: lists.languages } : {}),
        ...(lists.countries ? { countries: lists.countries } : {}),
      },
      assets: assets as AssetInput[],
      variables: (body.variables as Record<string, unknown>) ?? {},
      sampleSize,
      resolveOnly,
      ...(typeof body.permId === 'string' ? { permId: body.permId } : {}),
      ...(typeof body.name === 'string' ? { name: body.name } : {}),
      ...tracking,
    },
    problems,
  };
}

/** The response to a request that could not be read: nothing counted, the problems as errors. */
export function invalidResponse(problems: Finding[]): ValidateResponse {
  return {
    channel: 'email',
    audience: { intended: 0, suppressed: 0, deliverable: 0, suppressionBreakdown: { unsubscribed: 0, invalidEmail: 0, noConsent: 0 } },
    languages: [],
    render: { samples: [], warnings: [], errors: problems },
  };
}
