/**
 * The tracking lint of a delivery (docs/validation.md, "Tracking lint"): every
 * link to the shop's own domains (options.trackingDomains; a subdomain of one
 * counts) carries the tracking parameters attribution depends on
 * (options.trackingParams), with one value across all parts and languages, and
 * utm_campaign equal to the delivery's permId or name. Pure: links come from
 * the templates as written (with their line) and, for links filled in per
 * recipient, from the rendered samples; `TrackingLint` gathers them and judges
 * them all at the end. No database, no sandbox.
 */
import { Parser } from 'htmlparser2';
import { UsageError } from '../errors.js';
import { trackingOptionProblem, type Finding, type NormalizedRequest } from '../model/validation.js';
import type { Field, ResolvedAsset } from './delivery.js';
import type { RenderedSink } from './render.js';

/** The parameters checked when the request names domains but no parameters. */
export const DEFAULT_TRACKING_PARAMS = ['utm_source', 'utm_medium', 'utm_campaign'];
/** The parameter whose value must be the delivery's permId or name. */
export const CAMPAIGN_PARAM = 'utm_campaign';
/** The most distinct links judged per part (a part as written, or one rendered sample of it); more are not judged. */
export const MAX_TRACKED_LINKS = 100;

/** A link as found: its URL, whether Liquid fills it in, and its line in the part (1-based). */
export interface FoundLink {
  url: string;
  line: number;
  liquid: boolean;
}

/** Where a judged link is: the asset, the part, its language, line and, for a rendered one, the contact. */
export interface LinkPlace {
  asset: ResolvedAsset;
  field: Field;
  language?: string;
  line?: number;
  contactId?: string;
  /** The link as written in the template, when it was rendered from one with Liquid. */
  template?: string;
}

const hasLiquid = (value: string) => /\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/.test(value);
const lineAt = (text: string, index: number) => {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
};

/** The hrefs of a part's `<a>` and `<area>` elements with their lines, at most MAX_TRACKED_LINKS distinct. */
function htmlLinks(html: string): FoundLink[] {
  const links: FoundLink[] = [];
  const seen = new Set<string>();
  const parser: Parser = new Parser(
    {
      onopentag(name, attributes) {
        const url = (attributes.href ?? '').trim();
        if ((name !== 'a' && name !== 'area') || !url || seen.has(url) || seen.size >= MAX_TRACKED_LINKS) return;
        seen.add(url);
        links.push({ url, line: lineAt(html, parser.startIndex), liquid: hasLiquid(url) });
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  return links;
}

/** The http(s) URLs of a plain-text part with their lines (trailing punctuation is not part of one), at most MAX_TRACKED_LINKS distinct. */
function textLinks(text: string): FoundLink[] {
  const links: FoundLink[] = [];
  const seen = new Set<string>();
  // A URL runs to white space or a bracket; Liquid inside it ({{ x }}, with its spaces) stays part of it.
  const pattern = /https?:\/\/(?:\{\{[^}]*\}\}|\{%[^%]*%\}|[^\s<>"'()[\]{}])+/gi;
  for (const match of text.matchAll(pattern)) {
    const url = match[0].replace(/[.,;:!?]+$/, '');
    if (seen.has(url)) continue;
    if (seen.size >= MAX_TRACKED_LINKS) break;
    seen.add(url);
    links.push({ url, line: lineAt(text, match.index), liquid: hasLiquid(url) });
  }
  return links;
}

/** The links of a part: hrefs of HTML, URLs of the text part (the subject and preheader have none). */
export function partLinks(field: Field, content: string): FoundLink[] {
  if (field === 'html') return htmlLinks(content);
  if (field === 'text') return textLinks(content);
  return [];
}

/** Whether a URL is an http(s) link to one of the domains or a subdomain of one; its query when it is. */
export function shopQuery(url: string, domains: readonly string[]): URLSearchParams | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
  return domains.some((d) => host === d || host.endsWith(`.${d}`)) ? parsed.searchParams : undefined;
}

/** A template link as a pattern its rendered links match: the text as written, each Liquid part any text. */
export function templatePattern(url: string): RegExp {
  const literal = url.split(/\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${literal.join('[\\s\\S]*?')}$`);
}

/** The tracking settings of a request: none when it names no domains (the lint does not run). */
export interface TrackingSettings {
  domains: string[];
  params: string[];
  /** The values utm_campaign may take: the request's permId and name, when given. */
  campaign: { permId?: string; name?: string };
}

export function trackingSettings(request: NormalizedRequest): TrackingSettings | undefined {
  const { trackingDomains, trackingParams, permId, name } = request;
  if (!trackingDomains?.length) return undefined;
  return {
    domains: trackingDomains.map((d) => d.toLowerCase()),
    params: trackingParams?.length ? trackingParams : DEFAULT_TRACKING_PARAMS,
    campaign: { ...(permId ? { permId } : {}), ...(name ? { name } : {}) },
  };
}

/** The lint of a request, when it names the shop's domains (else undefined: the lint does not run). */
export function trackingLint(request: NormalizedRequest): TrackingLint | undefined {
  const settings = trackingSettings(request);
  return settings && new TrackingLint(settings);
}

interface Observed extends LinkPlace {
  url: string;
  query: URLSearchParams;
}

const cutUrl = (url: string) => (url.length > 200 ? `${url.slice(0, 200)}…` : url);
/** "link URL in html line 3 of welcome-cs (cs)", with the template and contact of a rendered one. */
function describe(o: Observed): string {
  const rendered = o.contactId === undefined ? '' : ` (rendered for contact ${o.contactId}${o.template ? ` from ${cutUrl(o.template)}` : ''})`;
  const line = o.line === undefined ? '' : ` line ${o.line}`;
  return `link ${cutUrl(o.url)}${rendered} in ${o.field}${line} of ${o.asset.ref}${o.language ? ` (${o.language})` : ''}`;
}

function findingOf(code: string, message: string, o: Observed): Finding {
  return {
    code,
    message,
    assetRef: o.asset.ref,
    ...(o.language ? { language: o.language } : {}),
    field: o.field,
    ...(o.contactId === undefined ? {} : { contactId: o.contactId }),
    ...(o.line === undefined ? {} : { line: o.line }),
  };
}

/**
 * The links to the shop's domains of a validation, gathered part by part
 * (`written`: a part as written; `rendered`: a rendered sample), then judged
 * together (`findings`): tracking_param_missing and tracking_param_mismatch
 * (errors), tracking_inconsistent (a warning).
 */
export class TrackingLint implements RenderedSink {
  private readonly observed: Observed[] = [];
  /** The Liquid links of each asset's part as written, to name the template of a rendered link. */
  private readonly templates = new Map<string, FoundLink[]>();
  /** The links as written without Liquid, already judged: a rendered sample's copy of one is not judged again. */
  private readonly fixed = new Map<string, Set<string>>();

  constructor(readonly settings: TrackingSettings) {}

  /** The parts to render for the samples: those with a link that Liquid fills in. */
  fields(asset: ResolvedAsset): Field[] {
    return (['html', 'text'] as const).filter((f) => this.templates.get(`${asset.ref} ${f}`)?.length);
  }

  /** The links of each part of an asset as written (links with Liquid wait for the samples). */
  written(asset: ResolvedAsset): void {
    for (const field of ['html', 'text'] as const) {
      const content = asset.content[field];
      if (!content) continue;
      const links = partLinks(field, content);
      const key = `${asset.ref} ${field}`;
      this.templates.set(key, links.filter((l) => l.liquid));
      this.fixed.set(key, new Set(links.filter((l) => !l.liquid).map((l) => l.url)));
      for (const link of links) {
        if (!link.liquid) this.observe(link.url, { asset, field, ...(asset.language ? { language: asset.language } : {}), line: link.line });
      }
    }
  }

  /** The links of a rendered sample's part that were filled in per recipient. */
  rendered(asset: ResolvedAsset, field: Field, language: string, contactId: string, output: string): void {
    const key = `${asset.ref} ${field}`;
    const templates = (this.templates.get(key) ?? []).map((l) => ({ link: l, pattern: templatePattern(l.url) }));
    for (const { url } of partLinks(field, output)) {
      if (this.fixed.get(key)?.has(url)) continue;
      const from = templates.find((t) => t.pattern.test(url))?.link;
      this.observe(url, { asset, field, language, contactId, ...(from ? { line: from.line, template: from.url } : {}) });
    }
  }

  private observe(url: string, place: LinkPlace): void {
    const query = shopQuery(url, this.settings.domains);
    if (query) this.observed.push({ url, query, ...place });
  }

  /** Adds the findings of the links gathered to the validation's lists. */
  judge(errors: Finding[], warnings: Finding[]): void {
    const found = this.findings();
    errors.push(...found.errors);
    warnings.push(...found.warnings);
  }

  /** Every finding of the links gathered, in the order they were found. */
  findings(): { errors: Finding[]; warnings: Finding[] } {
    const errors: Finding[] = [];
    const warnings: Finding[] = [];
    const { params, campaign } = this.settings;
    const expected = [campaign.permId, campaign.name].filter((v): v is string => v !== undefined);
    const first = new Map<string, Observed>();
    for (const o of this.observed) {
      const missing = params.filter((p) => !o.query.get(p));
      if (missing.length) {
        errors.push(findingOf('tracking_param_missing', `${describe(o)} lacks ${missing.join(', ')}${missing.some((p) => o.query.has(p)) ? ' (empty counts as missing)' : ''}`, o));
      }
      for (const param of params) {
        const value = o.query.get(param);
        if (!value) continue;
        if (param === CAMPAIGN_PARAM && expected.length && !expected.includes(value)) {
          const wanted = [campaign.permId && `permId "${campaign.permId}"`, campaign.name && `name "${campaign.name}"`].filter(Boolean).join(' or ');
          errors.push(findingOf('tracking_param_mismatch', `${describe(o)} has ${param}=${value}, not the delivery's ${wanted}`, o));
          continue;
        }
        const earlier = first.get(param);
        if (!earlier) first.set(param, o);
        else if (earlier.query.get(param) !== value) {
          warnings.push(
            findingOf('tracking_inconsistent', `${describe(o)} has ${param}=${value}, but ${describe(earlier)} has ${param}=${earlier.query.get(param)}`, o),
          );
        }
      }
    }
    return { errors, warnings };
  }
}

/** A comma list of a flag or setting (`source`), its entries trimmed; a usage error naming the source when it is not a valid list. */
export function trackingList(key: 'trackingDomains' | 'trackingParams', text: string, source: string): string[] {
  const list = text.split(',').map((s) => s.trim()).filter(Boolean);
  const problem = list.length ? trackingOptionProblem(key, list) : 'lists nothing';
  if (problem) throw new UsageError(`${source}: ${problem}`);
  return list;
}

/**
 * The tracking options a run adds to the request's `options` (the CLI's plumbing):
 * --tracking-domains and --tracking-params replace the request's; without
 * either, the profile's trackingParams fills in the parameters of a request
 * that names domains. A bad list is a usage error naming its flag or setting.
 */
export function trackingOptionsOf(
  flags: { trackingDomains?: string; trackingParams?: string },
  profileParams: string | undefined,
  options: Record<string, unknown>,
): void {
  const given: [key: 'trackingDomains' | 'trackingParams', text: string | undefined, source: string][] = [
    ['trackingDomains', flags.trackingDomains, '--tracking-domains'],
    ['trackingParams', flags.trackingParams, '--tracking-params'],
  ];
  if (flags.trackingParams === undefined && options.trackingParams === undefined && (flags.trackingDomains !== undefined || options.trackingDomains !== undefined)) {
    given.push(['trackingParams', profileParams, 'trackingParams of the profile']);
  }
  for (const [key, text, source] of given) {
    if (text !== undefined) options[key] = trackingList(key, text, source);
  }
}
