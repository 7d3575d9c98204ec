/**
 * The rules of a delivery validation that need no database (docs/validation.md,
 * "convx validate"): pure functions from plain data (the normalised request, the
 * audience's counts, its languages with their recipients, the resolved assets,
 * the variables a template prints) to findings. The SQL side
 * (src/local/validate.ts) gathers that data over every contact and calls
 * these; the template work (src/validation/render.ts) is beside them.
 */
import { TooLargeError } from '../errors.js';
import { agree, plural, withCommas } from '../words.js';
import { MAX_ASSETS, MAX_AUDIENCE_IDS, type AssetInput, type Finding, type InlineAsset, type NormalizedRequest, type ValidateResponse } from '../model/validation.js';
import { checkHtml } from './html.js';
import { notWhole } from './html-parser.js';
import { lineAt, lineStarts } from './line-numbers.js';
import { printedVariables, referencedVariables } from './templates.js';

/** The parts of an asset, in the order they are checked. */
export const FIELDS = ['subject', 'preheader', 'html', 'text'] as const;
export type Field = (typeof FIELDS)[number];

/** An asset of the request with its content: looked up by id, or given inline (`inline:<index>`). */
export interface ResolvedAsset {
  ref: string;
  language: string | null;
  content: Partial<Record<Field, string>>;
}

/** Findings of one rule, each list in the order the response gives them. */
export interface Findings {
  errors: Finding[];
  warnings: Finding[];
}


/** Where a finding about an asset is: its ref, and its language when it has one. */
export const where = (asset: ResolvedAsset) => ({ assetRef: asset.ref, ...(asset.language ? { language: asset.language } : {}) });

/** Refuses a request over the documented sizes before any work is done (TooLargeError: HTTP 413, exit 2). */
export function checkRequestSize(request: NormalizedRequest): void {
  const { lists, contactIds, excludeLists, languages = [], countries = [] } = request.audience;
  const entries = lists.length + contactIds.length + excludeLists.length + languages.length + countries.length;
  if (entries > MAX_AUDIENCE_IDS) {
    throw new TooLargeError(
      `the audience lists ${withCommas(entries)} entries (lists, contactIds, excludeLists, languages and countries together); at most ${withCommas(MAX_AUDIENCE_IDS)} are allowed: validate a list, or split the ids`,
      'maxAudienceIds',
    );
  }
  if (request.assets.length > MAX_ASSETS) {
    throw new TooLargeError(`the request gives ${request.assets.length} assets; at most ${MAX_ASSETS} are allowed (one per language)`, 'maxAssets');
  }
}

/** The audience as counted over every contact (deduplicated; suppression first reason first). */
export interface AudienceCounts {
  intended: number;
  suppressed: number;
  unsubscribed: number;
  invalidEmail: number;
  noConsent: number;
  /** Contacts left out because another in the audience has their address. */
  duplicates: number;
}

/** The response's `audience`. */
export function audienceSummary(counts: AudienceCounts): ValidateResponse['audience'] {
  return {
    intended: counts.intended,
    suppressed: counts.suppressed,
    deliverable: counts.intended - counts.suppressed,
    suppressionBreakdown: { unsubscribed: counts.unsubscribed, invalidEmail: counts.invalidEmail, noConsent: counts.noConsent },
  };
}

/** duplicate_email (a warning) and no_recipients (an error). */
export function audienceFindings(counts: AudienceCounts): Findings {
  const findings: Findings = { errors: [], warnings: [] };
  if (counts.duplicates > 0) {
    findings.warnings.push({
      code: 'duplicate_email',
      message: `${plural(counts.duplicates, 'contact')} ${agree(counts.duplicates, 'shares', 'share')} an e-mail address with another in the audience and will not get a second copy`,
      count: counts.duplicates,
    });
  }
  if (counts.intended - counts.suppressed === 0) {
    findings.errors.push({
      code: 'no_recipients',
      message: counts.intended === 0 ? 'the audience selects no contacts' : `all ${plural(counts.intended, 'contact')} of the audience are suppressed`,
      count: 0,
    });
  }
  return findings;
}

const assetLanguage = (value: unknown) => (typeof value === 'string' && value.trim() ? value.trim().toLowerCase() : null);
const assetContent = (source: Record<string, unknown>): ResolvedAsset['content'] =>
  Object.fromEntries(FIELDS.filter((f) => typeof source[f] === 'string').map((f) => [f, source[f] as string]));

/**
 * The request's assets with their content, in the request's order: an asset by
 * id from `stored` (the first row of each asset_id of the dataset's assets),
 * an inline one as `inline:<index>`. An id not stored is asset_not_found.
 */
export function resolveAssets(
  inputs: readonly AssetInput[],
  stored: ReadonlyMap<string, Record<string, unknown>>,
  hasAssetsTable: boolean,
): { assets: ResolvedAsset[]; errors: Finding[] } {
  const assets: ResolvedAsset[] = [];
  const errors: Finding[] = [];
  inputs.forEach((input, index) => {
    if ('assetId' in input) {
      const row = stored.get(input.assetId);
      if (!row) {
        errors.push({
          code: 'asset_not_found',
          message: hasAssetsTable
            ? `no asset ${input.assetId} in the dataset's assets`
            : `asset ${input.assetId} is referred to by id, but the dataset has no assets table`,
          assetRef: input.assetId,
        });
        return;
      }
      assets.push({ ref: input.assetId, language: assetLanguage(row.language), content: assetContent(row) });
    } else {
      const inline = input as InlineAsset;
      assets.push({ ref: `inline:${index}`, language: assetLanguage(inline.language), content: assetContent(inline as Record<string, unknown>) });
    }
  });
  return { assets, errors };
}

/** The deliverable recipients of one language (NO_LANGUAGE for those without one). */
export interface LanguageCount {
  language: string;
  recipients: number;
}

/**
 * Which asset each language of the audience gets: its own, else the one
 * without a language (language_fallback), else none (no_asset_for_language);
 * two assets for one language, or two without one, are
 * duplicate_asset_language. `languagesOf` gives each asset the languages it serves.
 */
export function languageCoverage(
  found: readonly LanguageCount[],
  assets: readonly ResolvedAsset[],
): Findings & { languages: ValidateResponse['languages']; languagesOf: Map<ResolvedAsset, string[]> } {
  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  const forLanguage = new Map<string, ResolvedAsset>();
  const fallback = assets.filter((a) => a.language === null);
  for (const asset of assets) {
    if (asset.language === null) continue;
    if (forLanguage.has(asset.language)) {
      errors.push({
        code: 'duplicate_asset_language',
        message: `${forLanguage.get(asset.language)!.ref} and ${asset.ref} are both for language ${asset.language}; which one would be sent?`,
        assetRef: asset.ref,
        language: asset.language,
      });
    } else forLanguage.set(asset.language, asset);
  }
  if (fallback.length > 1) {
    errors.push({
      code: 'duplicate_asset_language',
      message: `${fallback.map((a) => a.ref).join(' and ')} all have no language; at most one asset may be the fallback`,
      assetRef: fallback[1]!.ref,
    });
  }
  const languages: ValidateResponse['languages'] = [];
  const languagesOf = new Map<ResolvedAsset, string[]>();
  for (const { language, recipients } of found) {
    const asset = forLanguage.get(language) ?? fallback[0];
    if (!asset) {
      errors.push({
        code: 'no_asset_for_language',
        message: `no asset for language ${language} and no asset without a language to fall back on; ${plural(recipients, 'recipient')} would get nothing`,
        language,
        count: recipients,
      });
      continue;
    }
    if (!forLanguage.has(language)) {
      warnings.push({
        code: 'language_fallback',
        message: `${plural(recipients, 'recipient')} in language ${language} ${agree(recipients, 'gets', 'get')} ${asset.ref}, which has no language`,
        language,
        assetRef: asset.ref,
        count: recipients,
      });
    }
    languages.push({ language, recipients, assetRef: asset.ref });
    languagesOf.set(asset, [...(languagesOf.get(asset) ?? []), language]);
  }
  return { errors, warnings, languages, languagesOf };
}

/** The first characters of a listed item (a link, an image's src) in a message. */
const short = (item: string) => (item.length > 120 ? `${item.slice(0, 120)}…` : item);
/** The first three items, and "…" when there are more. */
const list = (items: string[]) => `${items.slice(0, 3).map(short).join(', ')}${items.length > 3 ? ', …' : ''}`;

/**
 * The checks of an asset's content as written (before rendering): missing_subject
 * (an error), missing_text_part and the HTML checks (warnings): unsubscribe
 * link, images, links, size.
 */
export function assetFindings(asset: ResolvedAsset): Findings {
  const at = where(asset);
  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  if (!asset.content.subject?.trim()) errors.push({ code: 'missing_subject', message: `${asset.ref} has no subject`, ...at, field: 'subject' });
  if (!asset.content.text?.trim()) {
    warnings.push({ code: 'missing_text_part', message: `${asset.ref} has no plain-text part; some clients and spam filters want one`, ...at, field: 'text' });
  }
  const report = checkHtml(asset.content.html ?? '');
  const html = (code: string, message: string, count?: number): Finding => ({ code, message, ...at, field: 'html', ...(count === undefined ? {} : { count }) });
  /** A finding that lists the items (links, images) it is about; none when there are none. */
  const itemized = (code: string, items: string[], noun: string, what: string) =>
    items.length ? [html(code, `${plural(items.length, noun)} ${what}: ${list(items)}`, items.length)] : [];
  if (!report.hasUnsubscribe) warnings.push(html('missing_unsubscribe_link', `${asset.ref} has no unsubscribe link`));
  warnings.push(
    ...itemized('image_missing_alt', report.imagesWithoutAlt, 'image', 'without alt text'),
    ...itemized('insecure_link', report.insecureLinks, 'link', 'over plain http'),
    ...(report.emptyLinks ? [html('empty_link', `${plural(report.emptyLinks, 'link')} with an empty or "#" href`, report.emptyLinks)] : []),
    ...itemized('placeholder_link', report.placeholderLinks, 'link', 'to a placeholder or an unusable scheme'),
    ...itemized('relative_link', report.relativeLinks, 'link', 'without a scheme, which go nowhere from an inbox'),
  );
  if (report.tooLarge) {
    warnings.push(html('html_too_large', `the HTML is ${Math.ceil(report.bytes / 1024)} KB; Gmail clips messages over 102 KB`, report.bytes));
  }
  if (!report.extent.whole) {
    const line = lineAt(lineStarts(asset.content.html ?? ''), report.extent.offset);
    warnings.push({ ...html('html_not_checked_whole', `${notWhole(report.extent)}: its checks read it up to line ${line}`), line });
  }
  return { errors, warnings };
}

/** Every part the asset has parsed (a part that does not parse is not rendered, nor is the asset). */
export function allParsed(asset: ResolvedAsset, parsed: ReadonlySet<Field>): boolean {
  return FIELDS.every((f) => asset.content[f] === undefined || parsed.has(f));
}

/** The most distinct printed variables of one asset counted for unresolved_variable (one SQL column each). */
export const MAX_CHECKED_VARIABLES = 500;

/**
 * A variable an asset prints without a default: `key` as written
 * ("contact.firstName", "promo_code"), its path, the parts that print it, and
 * where its value comes from: a field of the contact (`contactField`, the
 * camelCase key after "contact."; undefined for a deeper or bare `contact`
 * path, which no contact has) or the request's variables (`emptyInRequest`:
 * the request gives it no value, so every recipient sees it empty).
 */
export type PrintedVariable = { key: string; path: string[]; fields: Field[] } & (
  | { source: 'contact'; contactField: string | undefined }
  | { source: 'variables'; emptyInRequest: boolean }
);

function lookup(value: unknown, path: string[]): unknown {
  let current = value;
  for (const key of path) {
    // Liquid's own size, first and last of a list or a string.
    if (Array.isArray(current) || typeof current === 'string') {
      if (key === 'size') return current.length;
      if (key === 'first' || key === 'last') return key === 'first' ? current[0] : current[current.length - 1];
    }
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** The variables the parsed parts of an asset print without a default, at most MAX_CHECKED_VARIABLES, in the order first printed. */
export function printedVariablesOf(asset: ResolvedAsset, parsed: ReadonlySet<Field>, variables: Record<string, unknown>): PrintedVariable[] {
  return variablesOf(asset, parsed, variables, printedVariables);
}

/**
 * The variables the parsed parts of an asset read but do not print plainly (templates.ts
 * referencedVariables: given `| default`, or named in a tag), those printed plainly left out: judged
 * only as to whether they exist.
 */
export function referencedVariablesOf(asset: ResolvedAsset, parsed: ReadonlySet<Field>, variables: Record<string, unknown>, printed: readonly PrintedVariable[]): PrintedVariable[] {
  // one already printed, or along the path of one printed (`products` of `{{ products.size }}`), is judged there
  const along = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
  return variablesOf(asset, parsed, variables, referencedVariables).filter((v) => !printed.some((p) => along(p.key, v.key)));
}

function variablesOf(asset: ResolvedAsset, parsed: ReadonlySet<Field>, variables: Record<string, unknown>, find: (template: string) => string[][]): PrintedVariable[] {
  const used = new Map<string, { path: string[]; fields: Field[] }>();
  for (const field of FIELDS) {
    const template = asset.content[field];
    if (!template || !parsed.has(field)) continue;
    for (const path of find(template)) {
      const key = path.join('.');
      if (!used.has(key) && used.size >= MAX_CHECKED_VARIABLES) break;
      used.set(key, { path, fields: [...(used.get(key)?.fields ?? []), field] });
    }
  }
  return [...used].map(([key, { path, fields }]) => {
    if (path[0] === 'contact') return { key, path, fields, source: 'contact', contactField: path.length === 2 ? path[1]! : undefined };
    const value = lookup(variables, path);
    return { key, path, fields, source: 'variables', emptyInRequest: value === undefined || value === null || value === '' };
  });
}

/** unresolved_variable for each printed variable some deliverable recipients of the asset would see empty (`empty`: how many, by key). */
export function unresolvedVariables(asset: ResolvedAsset, printed: readonly PrintedVariable[], empty: ReadonlyMap<string, number>): Finding[] {
  const warnings: Finding[] = [];
  for (const { key, fields, source } of printed) {
    const count = empty.get(key) ?? 0;
    if (count === 0) continue;
    warnings.push({
      code: 'unresolved_variable',
      message: `{{ ${key} }} in ${fields.join(', ')} is empty for ${plural(count, 'deliverable recipient')} (${source === 'contact' ? 'contact field' : 'variable'} without a value; add one, or a default filter)`,
      assetRef: asset.ref,
      field: fields[0]!,
      count,
    });
  }
  return warnings;
}

/** The samples in the order of the response's languages (most recipients first). */
export function orderSamples(samples: ValidateResponse['render']['samples'], languages: ValidateResponse['languages']): ValidateResponse['render']['samples'] {
  const rank = (language: string) => languages.findIndex((l) => l.language === language);
  return samples.sort((a, b) => rank(a.language) - rank(b.language));
}
