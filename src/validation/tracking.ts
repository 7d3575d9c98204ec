/**
 * Tracking lint (issue 20, point 2): every link to the shop's own domains carries the tracking
 * parameters that attribution depends on, with values that agree with the delivery and with each
 * other across every part and language. Pure: from the assets as written and the rendered samples
 * to findings. Links filled in per recipient (a template tag in the href) are judged after
 * rendering, in the samples; every other link as written.
 */
import { MAX_PARSED_CHARS, notWhole, parseHtml, type ParseExtent } from './html-parser.js';
import type { Finding, TrackingRequest } from '../model/validation.js';
import type { Field, ResolvedAsset } from './delivery.js';
import { lineAt, lineStarts } from './line-numbers.js';
import { plural } from '../words.js';

/** The most links of one part that are judged (a template's size is bounded; this bounds the work per part). */
export const MAX_LINKS_PER_PART = 1000;
/** The most findings of one code that are listed; one more finding counts the rest. */
export const MAX_FINDINGS_PER_CODE = 20;

/** A link of a part: its href as written or rendered, the line it is on (1-based) and whether a template fills it in. */
interface Link {
  href: string;
  line: number;
  templated: boolean;
}

/** A link to an own domain, where it is, and its tracking parameters' values (undefined: missing). */
interface OwnLink {
  href: string;
  assetRef: string;
  language?: string;
  field: Field;
  line?: number;
  contactId?: string;
  /** Rendered: how many other samples rendered the same link with the same parameters. */
  others?: number;
  values: Map<string, string | undefined>;
}

const TEMPLATE_TAG = /\{\{|\{%/;
const UNSUBSCRIBE = /unsubscribe|opt-?out|abmelden|odhlas/i;
/**
 * A URL in a text part: up to a blank, a quote or an angle bracket; trailing punctuation is not
 * part of it. A template tag in it ({{ contact.contactId }}, blanks and all) is part of it.
 */
const TEXT_URL = /https?:\/\/(?:\{\{[^}]{0,256}\}\}|\{%[^%]{0,256}%\}|[^\s<>"'`{]|\{(?![{%]))+/gi;

/** The links (a and area href) of an HTML part, each with its line, and how far the parse read it (parseHtml). */
export function htmlLinksRead(html: string): { links: Link[]; extent: ParseExtent } {
  const links: Link[] = [];
  // the lines of what a parse reads (MAX_PARSED_CHARS), not of a longer rendered sample's rest
  const starts = lineStarts(html.length > MAX_PARSED_CHARS ? html.slice(0, MAX_PARSED_CHARS) : html);
  const extent = parseHtml(
    html,
    (start) => ({
      onopentag(name, attributes) {
        if ((name !== 'a' && name !== 'area') || attributes.href === undefined || links.length >= MAX_LINKS_PER_PART) return;
        const href = attributes.href.trim();
        links.push({ href, line: lineAt(starts, start()), templated: TEMPLATE_TAG.test(href) });
      },
    }),
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  return { links, extent };
}

/** The links (a and area href) of an HTML part, each with its line. */
export const htmlLinks = (html: string): Link[] => htmlLinksRead(html).links;

/**
 * The http(s) URLs of a text part, each with its line, in its first MAX_PARSED_CHARS (a template
 * tag in a URL is read to 256 characters: an unclosed `{{` after each of 40,000 `http://` had the
 * pattern read on to the end each time, 15 s of the main thread).
 */
export function textLinks(whole: string): Link[] {
  const links: Link[] = [];
  const text = whole.length > MAX_PARSED_CHARS ? whole.slice(0, MAX_PARSED_CHARS) : whole;
  const starts = lineStarts(text);
  for (const match of text.matchAll(TEXT_URL)) {
    if (links.length >= MAX_LINKS_PER_PART) break;
    // a closing brace ends a template tag, not a sentence (trimmed from the end: a pattern anchored
    // at the end tries every start of a long run of dots, 100,000 of them took 14 s)
    const href = trimEnd(match[0], TEMPLATE_TAG.test(match[0]) ? '.,;:!?)]' : '.,;:!?)]}');
    links.push({ href, line: lineAt(starts, match.index), templated: TEMPLATE_TAG.test(href) });
  }
  return links;
}

/** The text without the characters of `trailing` at its end. */
function trimEnd(text: string, trailing: string): string {
  let end = text.length;
  while (end > 0 && trailing.includes(text[end - 1]!)) end--;
  return text.slice(0, end);
}

/** True when a host is one of the domains or a subdomain of one (case-insensitive). */
export function isOwnHost(host: string, domains: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return domains.some((d) => h === d || h.endsWith(`.${d}`));
}

/** The link as an own link with its parameters' values, or undefined for a link elsewhere (or no URL). */
function ownLink(href: string, tracking: TrackingRequest, where: Omit<OwnLink, 'href' | 'values'>): OwnLink | undefined {
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return undefined; // relative, placeholder or broken links have their own checks
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !isOwnHost(url.hostname, tracking.domains)) return undefined;
  // an unsubscribe link leads to no conversion: it needs no tracking
  if (UNSUBSCRIBE.test(`${url.pathname}${url.search}`)) return undefined;
  const values = new Map<string, string | undefined>();
  // an empty value (utm_source=) tells attribution nothing: it counts as missing
  for (const param of tracking.params) values.set(param, url.searchParams.get(param) || undefined);
  return { href, values, ...where };
}

/** The own links of the assets as written (links without a template tag), html and text parts. */
function writtenLinks(assets: readonly ResolvedAsset[], tracking: TrackingRequest): OwnLink[] {
  const out: OwnLink[] = [];
  for (const asset of assets) {
    for (const field of ['html', 'text'] as const) {
      const content = asset.content[field];
      if (!content) continue;
      for (const link of linksOf(field, content)) {
        if (link.templated) continue;
        const own = ownLink(link.href, tracking, { assetRef: asset.ref, ...(asset.language ? { language: asset.language } : {}), field, line: link.line });
        if (own) out.push(own);
      }
    }
  }
  return out;
}

/** A rendered sample: its asset, language, contact, whole HTML and, when a template fills in a URL of it, text part. */
export interface RenderedSample {
  assetRef: string;
  language: string;
  contactId: string;
  html: string;
  text?: string;
}

const linksOf = (field: 'html' | 'text', content: string) => (field === 'html' ? htmlLinks(content) : textLinks(content));

/** Whether the samples must render an asset's text part: a template fills in a URL of it. */
export function textNeedsRendering(asset: ResolvedAsset): boolean {
  return textLinks(asset.content.text ?? '').some((l) => l.templated);
}

/**
 * The most characters of rendered samples (HTML and text parts) one request reads for their links:
 * past it, the other samples' parts are not read, and a finding says so (html_not_checked_whole,
 * text_not_checked_whole). 20 samples of 2 MiB took over a second of the main thread, where every
 * request waits.
 */
export const MAX_RENDERED_PARSED_CHARS = 8 * 1024 * 1024;

/** A rendered part the links were not read from whole: each sample's, with why (html_not_checked_whole, text_not_checked_whole). */
interface CutSample {
  sample: RenderedSample;
  field: 'html' | 'text';
  extent: Extract<ParseExtent, { whole: false }> | { whole: false; why: 'budget' };
}

/** The own links that a template fills in, as the samples rendered them (the line is the template's), and the samples not read whole. */
function renderedLinks(assets: readonly ResolvedAsset[], samples: readonly RenderedSample[], tracking: TrackingRequest): { links: OwnLink[]; cut: CutSample[] } {
  const out: OwnLink[] = [];
  const seen = new Map<string, OwnLink>();
  const read = { chars: 0, cut: [] as CutSample[] };
  for (const asset of assets) {
    for (const field of ['html', 'text'] as const) {
      const written = linksOf(field, asset.content[field] ?? '');
      if (written.some((l) => l.templated)) renderedPart(asset, field, written, samples, tracking, seen, out, read);
    }
  }
  return { links: out, cut: read.cut };
}

/** A rendered part's links: a text part's, or an HTML part's as far as its parse and the request's budget read it. */
function renderedLinksOf(field: 'html' | 'text', sample: RenderedSample, read: { chars: number; cut: CutSample[] }): Link[] {
  if (read.chars >= MAX_RENDERED_PARSED_CHARS) {
    read.cut.push({ sample, field, extent: { whole: false, why: 'budget' } });
    return [];
  }
  read.chars += Math.min(sample[field]!.length, MAX_PARSED_CHARS);
  if (field === 'text') return textLinks(sample.text!);
  const { links, extent } = htmlLinksRead(sample.html);
  if (!extent.whole) read.cut.push({ sample, field, extent });
  return links;
}

/**
 * html_not_checked_whole of the rendered samples whose HTML was not read whole, text_not_checked_whole
 * of those whose text part was not read (past the budget): one finding per asset, part and why.
 */
function cutFindings(cut: readonly CutSample[]): Finding[] {
  const groups = new Map<string, CutSample[]>();
  for (const c of cut) {
    const key = JSON.stringify([c.sample.assetRef, c.field, c.extent.why]);
    groups.set(key, [...(groups.get(key) ?? []), c]);
  }
  const budget = `${MAX_RENDERED_PARSED_CHARS / 1024 / 1024} MiB`;
  return [...groups.values()].map((group) => {
    const [{ sample, field, extent }] = group as [CutSample, ...CutSample[]];
    const others = group.length > 1 ? ` and ${plural(group.length - 1, 'other sample')}` : '';
    const message =
      field === 'text'
        ? `as rendered for contact ${sample.contactId}${others}, the text part comes past the ${budget} of rendered parts a validation reads for links: its links are not judged`
        : `as rendered for contact ${sample.contactId}${others}, ${extent.why === 'budget' ? `past the ${budget} of rendered HTML a validation reads for links` : notWhole(extent)}: its links are judged as far as it was read`;
    return {
      code: field === 'text' ? 'text_not_checked_whole' : 'html_not_checked_whole',
      message,
      assetRef: sample.assetRef,
      language: sample.language,
      field,
      contactId: sample.contactId,
      count: group.length,
    };
  });
}

/** The own links a template fills in of one part of an asset, as each sample rendered it (renderedLinks). */
function renderedPart(
  asset: ResolvedAsset,
  field: 'html' | 'text',
  written: readonly Link[],
  samples: readonly RenderedSample[],
  tracking: TrackingRequest,
  seen: Map<string, OwnLink>,
  out: OwnLink[],
  read: { chars: number; cut: CutSample[] },
): void {
  const fixed = new Set(written.filter((l) => !l.templated).map((l) => l.href));
  for (const sample of samples.filter((s) => s.assetRef === asset.ref && s[field] !== undefined)) {
    const rendered = renderedLinksOf(field, sample, read);
    const where = { assetRef: asset.ref, language: sample.language, field, contactId: sample.contactId };
    // the same links in the same order: the n-th rendered link is the n-th written one, with its line;
    // else (a loop or a condition changed them) the rendered links that are not written as they are
    const pairs: [Link, number | undefined][] =
      rendered.length === written.length
        ? rendered.map((r, i) => [r, written[i]!.templated ? written[i]!.line : -1])
        : rendered.filter((r) => !fixed.has(r.href)).map((r) => [r, undefined]);
    for (const [link, line] of pairs) {
      if (line === -1) continue; // written as it is: judged above
      const own = ownLink(link.href, tracking, { ...where, ...(line !== undefined ? { line } : {}) });
      if (!own) continue;
      // one link of the template, the same parameters in every sample: judged once, the other samples counted
      const key = JSON.stringify([asset.ref, field, sample.language, line ?? link.href, [...own.values]]);
      const first = seen.get(key);
      if (first) first.others = (first.others ?? 0) + 1;
      else {
        seen.set(key, own);
        out.push(own);
      }
    }
  }
}

/** The values a delivery's campaign parameter may take: its permId, its name, the name as a slug. */
export function campaignValues(request: { name?: string; permId?: string }): string[] {
  const values = new Set<string>();
  if (request.permId) values.add(request.permId);
  if (request.name) {
    values.add(request.name);
    const slug = request.name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
    if (slug) {
      values.add(slug);
      values.add(slug.replaceAll('-', '_'));
    }
  }
  return [...values];
}

/** Where a finding about a link is. */
function at(link: OwnLink): Partial<Finding> {
  return {
    assetRef: link.assetRef,
    ...(link.language ? { language: link.language } : {}),
    field: link.field,
    ...(link.line !== undefined ? { line: link.line } : {}),
    ...(link.contactId ? { contactId: link.contactId } : {}),
  };
}

/** A link as a message names it: the part and its line there (an inline asset's finding is placed at the asset's line of the request file), the URL, the samples. */
const linkName = (link: OwnLink) =>
  `${link.field}${link.line !== undefined ? ` line ${link.line}` : ''}: ${link.href}${link.contactId ? ` (as rendered for contact ${link.contactId}${link.others ? ` and ${link.others} other ${link.others === 1 ? 'sample' : 'samples'}` : ''})` : ''}`;

/** Findings of each code, at most MAX_FINDINGS_PER_CODE, then one counting the rest. */
function capped(findings: Finding[]): Finding[] {
  const out: Finding[] = [];
  const counts = new Map<string, number>();
  for (const f of findings) counts.set(f.code, (counts.get(f.code) ?? 0) + 1);
  const seen = new Map<string, number>();
  for (const f of findings) {
    const n = (seen.get(f.code) ?? 0) + 1;
    seen.set(f.code, n);
    if (n <= MAX_FINDINGS_PER_CODE) out.push(f);
    else if (n === MAX_FINDINGS_PER_CODE + 1) out.push({ code: f.code, message: `and ${counts.get(f.code)! - MAX_FINDINGS_PER_CODE} more links like these`, count: counts.get(f.code)! - MAX_FINDINGS_PER_CODE });
  }
  return out;
}

/** Missing parameters, a campaign value that is not the delivery's, and values that differ from the links' usual one. */
function judge(links: readonly OwnLink[], tracking: TrackingRequest, campaign: readonly string[]): Finding[] {
  const findings: Finding[] = [];
  const usual = new Map<string, { value: string; n: number }>();
  for (const param of tracking.params) {
    // distinct links per value (a link written twice, or rendered for several samples, counts once)
    const hrefs = new Map<string, Set<string>>();
    for (const l of links) {
      const v = l.values.get(param);
      if (v !== undefined) hrefs.set(v, (hrefs.get(v) ?? new Set()).add(l.href));
    }
    const counts = new Map([...hrefs].map(([v, set]) => [v, set.size]));
    // the most used value; ties by the first seen
    let best: { value: string; n: number } | undefined;
    for (const [value, n] of counts) if (!best || n > best.n) best = { value, n };
    if (best && counts.size > 1) usual.set(param, best);
  }
  const campaignParam = tracking.params.find((p) => p === 'utm_campaign');
  const needs = `attribution needs ${tracking.params.join(', ')} on links to ${tracking.domains.join(', ')}`;
  const delivery = campaign.map((c) => JSON.stringify(c)).join(' or ');
  // Only the findings capped() lists are written out: past MAX_FINDINGS_PER_CODE of a code a finding
  // is counted, its message never made (1,000 links a part, each naming 100 long domains: 2.2 GB).
  const made = new Map<string, number>();
  const add = (code: string, make: () => Finding) => {
    const n = (made.get(code) ?? 0) + 1;
    made.set(code, n);
    findings.push(n <= MAX_FINDINGS_PER_CODE ? make() : { code, message: '' });
  };
  for (const link of links) {
    const missing = tracking.params.filter((p) => link.values.get(p) === undefined);
    if (missing.length) add('tracking_param_missing', () => ({ code: 'tracking_param_missing', message: `${linkName(link)} has no ${missing.join(', ')}: ${needs}`, ...at(link) }));
    const given = campaignParam ? link.values.get(campaignParam) : undefined;
    if (given !== undefined && campaign.length && !campaign.includes(given)) {
      add('tracking_param_mismatch', () => ({ code: 'tracking_param_mismatch', message: `${linkName(link)} has ${campaignParam}=${given}, not this delivery's ${delivery}`, ...at(link) }));
    }
    for (const [param, best] of usual) {
      const v = link.values.get(param);
      if (v !== undefined && v !== best.value && !(param === campaignParam && campaign.length)) {
        add('tracking_inconsistent', () => ({ code: 'tracking_inconsistent', message: `${linkName(link)} has ${param}=${v}, where ${best.n} ${best.n === 1 ? 'link has' : 'links have'} ${param}=${best.value}`, ...at(link) }));
      }
    }
  }
  return findings;
}

/**
 * The tracking findings of a delivery (warnings): its assets as written and the samples as
 * rendered, judged for the request's domains and parameters. None without tracking domains.
 */
export function trackingFindings(
  assets: readonly ResolvedAsset[],
  samples: readonly RenderedSample[],
  request: { tracking?: TrackingRequest; name?: string; permId?: string },
): Finding[] {
  const tracking = request.tracking;
  if (!tracking || !tracking.domains.length) return [];
  const rendered = renderedLinks(assets, samples, tracking);
  const links = [...writtenLinks(assets, tracking), ...rendered.links];
  return [...capped(judge(links, tracking, campaignValues(request))), ...cutFindings(rendered.cut)];
}
