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
    /**
     * `textExcerpt`: the rendered text part's first characters, when the asset has one; `digest`: a
     * hash of the whole rendered subject, HTML and text (a baseline sees a change past the excerpts);
     * `html`: the whole rendered HTML, only when the request's options ask for it (`preview`, for -o html).
     */
    samples: { language: string; contactId: string; subject: string; htmlExcerpt: string; textExcerpt?: string; digest?: string; html?: string }[];
    warnings: Finding[];
    errors: Finding[];
    /** Findings that never fail a run (CHECKS.information); present only when there are some. */
    information?: Finding[];
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
    // Issue 20, what the check missed: unknown or always-empty variables, audience values no contact has.
    'unknown_variable',
    'empty_variable',
    'unknown_list',
    'unknown_language',
    'unknown_country',
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
    // the HTML nested too deep or too long for its checks to read whole (validation/html-parser.ts)
    'html_not_checked_whole',
    // a rendered text part past what a validation reads for links (validation/tracking.ts)
    'text_not_checked_whole',
    'missing_text_part',
    'language_fallback',
    'duplicate_email',
    // Issue 20, what the check missed: contact ids the dataset does not have.
    'unknown_contact',
    // issue 20, mail-client support and content checks (src/validation/clients.ts, content.ts, headers.ts)
    'client_unsupported',
    'link_domain_mismatch',
    'url_shortener',
    'preheader_too_long',
    'subject_too_long',
    'subject_all_caps',
    'subject_exclamations',
    'image_only_body',
    'low_text_ratio',
    'missing_html_lang',
    'layout_table_role',
    'heading_order',
    'missing_list_unsubscribe',
    'invalid_list_unsubscribe',
    'missing_list_unsubscribe_post',
    // tracking lint (issue 20, point 2)
    'tracking_param_missing',
    'tracking_param_mismatch',
    'tracking_inconsistent',
  ],
  /** Findings that never fail a run, in `render.information`. */
  information: [
    // issue 20, mail-client support and content checks
    'client_partial',
    'missing_preheader',
    'missing_color_scheme_meta',
  ],
} as const;

/** Tracking lint's settings: the shop's own domains (subdomains count) and the parameters their links carry. */
export interface TrackingRequest {
  domains: string[];
  params: string[];
}

/** The tracking parameters when a request names its domains but not the parameters. */
export const DEFAULT_TRACKING_PARAMS = ['utm_source', 'utm_medium', 'utm_campaign'];

export interface NormalizedRequest {
  audience: Required<Pick<AudienceInput, 'lists' | 'contactIds' | 'excludeLists'>> & Pick<AudienceInput, 'languages' | 'countries'>;
  assets: AssetInput[];
  variables: Record<string, unknown>;
  sampleSize: number;
  resolveOnly: boolean;
  /** Globs of the mail clients to check (`gmail.*`); undefined: the default ones. */
  clients?: string[];
  /** The message's headers, when the request gives them (List-Unsubscribe is checked then). */
  headers?: Record<string, string>;
  /** The samples carry their whole rendered HTML (options.preview; issue 20's -o html preview). */
  preview?: boolean;
  /** Tracking lint (options.trackingDomains, options.trackingParams): links to these domains carry these parameters. */
  tracking?: TrackingRequest;
  /** The delivery's name and permId, as the request gives them (the campaign a link's utm_campaign names). */
  name?: string;
  permId?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

type Bad = (field: string, message: string) => void;

const AUDIENCE_LISTS = ['lists', 'contactIds', 'excludeLists', 'languages', 'countries'];
const INLINE_ASSET_FIELDS = ['language', 'subject', 'html', 'text', 'preheader'];
const REQUEST_FIELDS = ['audience', 'assets', 'variables', 'permId', 'name', 'tags', 'options', 'headers'];
const OPTION_FIELDS = ['sampleSize', 'resolveOnly', 'clients', 'preview', 'trackingDomains', 'trackingParams'];

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
    // A filter of none would select nobody: said, rather than a delivery of no recipients.
    else if (!value.length && (key === 'languages' || key === 'countries')) bad(`audience.${key}`, `is empty, so it selects nobody; leave it out for every ${key === 'languages' ? 'language' : 'country'}`);
    else lists[key] = value;
  }
  for (const key of Object.keys(audience)) {
    if (!AUDIENCE_LISTS.includes(key)) bad(`audience.${key}`, 'is not a field of audience');
  }
  // Not where lists or contactIds was given in a wrong shape: said above, and it was given.
  const misshapen = ['lists', 'contactIds'].some((key) => audience[key] !== undefined && !isStringArray(audience[key]));
  if (!lists.lists?.length && !lists.contactIds?.length && !misshapen) bad('audience', 'needs at least one of lists or contactIds');
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

/** A glob of mail clients: family.platform, letters, digits, "-" and "*". */
const CLIENT_GLOB = /^[a-z0-9*-]+(\.[a-z0-9*-]+)?$/i;
/** The most runs of `*` in one client glob (each multiplies a match's work). */
export const MAX_GLOB_STARS = 4;

/** options.clients: an array of globs (their match against the known clients is src/validation/clients.ts's). */
function checkClientOptions(options: Record<string, unknown>, checked: { clients?: string[] }, bad: Bad): void {
  if (options.clients === undefined) return;
  if (!isStringArray(options.clients) || !options.clients.length) bad('options.clients', 'must be a non-empty array of client globs such as "gmail.*" or "outlook.windows"');
  else if (options.clients.some((g) => !CLIENT_GLOB.test(g.trim()))) bad('options.clients', 'each entry is family.platform, "*" for any part: "gmail.*", "outlook.windows"');
  else if (options.clients.some((g) => (g.match(/\*+/g) ?? []).length > MAX_GLOB_STARS)) bad('options.clients', `each entry has at most ${MAX_GLOB_STARS} "*" (a run of them counts once): "gmail.*", "*.android"`);
  else checked.clients = options.clients.map((g) => g.trim());
}

/** The request's headers: an object of string values (List-Unsubscribe and the like). */
function checkHeaders(headers: unknown, bad: Bad): Record<string, string> | undefined {
  if (headers === undefined) return undefined;
  if (!isObject(headers) || Object.values(headers).some((v) => typeof v !== 'string')) bad('headers', 'must be an object of header names and string values');
  else if (Object.keys(headers).some((k) => !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k))) bad('headers', 'a header name is letters, digits and - (such as List-Unsubscribe)');
  else return headers as Record<string, string>;
  return undefined;
}

/** The options: a sample size within its bounds and resolveOnly, their defaults when left out. */
type CheckedOptions = { sampleSize: number; resolveOnly: boolean; clients?: string[]; preview: boolean; tracking?: TrackingRequest };

function checkOptions(options: unknown, bad: Bad): CheckedOptions {
  const checked: CheckedOptions = { sampleSize: DEFAULT_SAMPLE_SIZE, resolveOnly: false, preview: false };
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
  // A mistyped option (trackingDomain) would leave its check off without a word: refused, as any unknown field is.
  for (const key of Object.keys(options)) {
    if (!OPTION_FIELDS.includes(key)) bad(`options.${key}`, `is not an option (the options are ${OPTION_FIELDS.join(', ')})`);
  }
  checkClientOptions(options, checked, bad);
  checked.preview = checkPreviewOption(options, bad);
  const tracking = checkTrackingOptions(options, bad);
  if (tracking) checked.tracking = tracking;
  return checked;
}

/** A host name as a link's URL gives it: labels of letters, digits and hyphens, a dot between them. */
export const TRACKING_DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const TRACKING_PARAM = /^[A-Za-z0-9_.-]{1,100}$/;
/** The most tracking domains or parameters a request may name. */
export const MAX_TRACKING_ENTRIES = 100;

/** What each tracking list holds: the pattern of an entry and what one is called in a problem. */
export const TRACKING_LISTS = {
  trackingDomains: { pattern: TRACKING_DOMAIN, what: 'a domain name (such as shop.example.com)' },
  trackingParams: { pattern: TRACKING_PARAM, what: 'a query parameter name (letters, digits, _ . -)' },
} as const;

/** A list option of strings that each match a pattern, at most MAX_TRACKING_ENTRIES; undefined when absent or bad. */
function patternList(value: unknown, field: string, pattern: RegExp, what: string, bad: Bad): string[] | undefined {
  if (value === undefined) return undefined;
  if (!isStringArray(value) || value.length === 0 || value.length > MAX_TRACKING_ENTRIES) {
    bad(field, `must be an array of 1 to ${MAX_TRACKING_ENTRIES} strings`);
    return undefined;
  }
  const wrong = value.find((v) => !pattern.test(v));
  if (wrong !== undefined) {
    bad(field, `${JSON.stringify(wrong)} is not ${what}`);
    return undefined;
  }
  return value;
}

/** options.trackingDomains and options.trackingParams (issue 20, tracking lint); the parameters default to utm_source, utm_medium, utm_campaign. */
function checkTrackingOptions(options: Record<string, unknown>, bad: Bad): TrackingRequest | undefined {
  const domains = patternList(
    Array.isArray(options.trackingDomains) ? options.trackingDomains.map((d) => (typeof d === 'string' ? d.trim().toLowerCase().replace(/\.$/, '') : d)) : options.trackingDomains,
    'options.trackingDomains',
    TRACKING_LISTS.trackingDomains.pattern,
    TRACKING_LISTS.trackingDomains.what,
    bad,
  );
  const { pattern, what } = TRACKING_LISTS.trackingParams;
  const params = patternList(options.trackingParams, 'options.trackingParams', pattern, what, bad);
  if (params && options.trackingDomains === undefined) bad('options.trackingParams', 'needs options.trackingDomains: the domains whose links carry them');
  return domains ? { domains, params: params ?? DEFAULT_TRACKING_PARAMS } : undefined;
}

/** options.preview (issue 20, the -o html preview): each sample carries its whole rendered HTML. */
function checkPreviewOption(options: Record<string, unknown>, bad: Bad): boolean {
  if (options.preview === undefined) return false;
  if (typeof options.preview !== 'boolean') {
    bad('options.preview', 'must be true or false');
    return false;
  }
  return options.preview;
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
  const { sampleSize, resolveOnly, clients, preview, tracking } = checkOptions(body.options, bad);
  const headers = checkHeaders(body.headers, bad);
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
      ...(clients ? { clients } : {}),
      ...(headers ? { headers } : {}),
      preview,
      ...(tracking ? { tracking } : {}),
      ...(typeof body.name === 'string' ? { name: body.name } : {}),
      ...(typeof body.permId === 'string' ? { permId: body.permId } : {}),
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
