/**
 * More content checks of an asset (docs/validation.md, "Content checks"):
 * pure rules over the parts as written (before rendering), each with its own
 * code. The subject and preheader rules read their text with Liquid tags left
 * out; the HTML rules read one pass of htmlparser2 (`readHtml`), linear in
 * the template; the header rules read the request's `headers`.
 */
import { parseHtml } from './html-parser.js';
import type { Finding } from '../model/validation.js';
import { plural } from '../words.js';
import { lineAt, lineStarts } from './line-numbers.js';

/** Subjects longer than this are cut by most clients (mobile ones show about 40). */
export const MAX_SUBJECT_CHARS = 70;
/** Preheaders longer than this run into the body's text in the inbox preview. */
export const MAX_PREHEADER_CHARS = 150;
/** An HTML part with images and fewer visible characters than this is image-only. */
export const IMAGE_ONLY_TEXT_CHARS = 20;
/** With two images or more, fewer visible characters per image than this is a low text-to-image ratio. */
export const MIN_TEXT_CHARS_PER_IMAGE = 100;
/** Hosts of public URL shorteners, which spam filters distrust and which hide where a link goes. */
export const URL_SHORTENERS = [
  'bit.ly', 'bitly.com', 'buff.ly', 'cutt.ly', 'goo.gl', 'is.gd', 'lnkd.in', 'ow.ly', 'rb.gy', 'rebrand.ly',
  's.id', 'shorturl.at', 't.co', 't.ly', 'tiny.cc', 'tinyurl.com', 'v.gd', 'bl.ink', 'qrco.de',
];

export interface ContentFindings {
  warnings: Finding[];
  information: Finding[];
}

type Where = Omit<Finding, 'code' | 'message'>;

/** A text with its {{ … }} and {% … %} tags left out (indexOf, linear). */
export function withoutTags(text: string): string {
  const kept: string[] = [];
  let at = 0;
  for (;;) {
    const open = text.indexOf('{', at);
    const kind = open < 0 ? '' : text[open + 1];
    if (open < 0) break;
    if (kind !== '{' && kind !== '%') {
      kept.push(text.slice(at, open + 1));
      at = open + 1;
      continue;
    }
    const close = text.indexOf(kind === '{' ? '}}' : '%}', open + 2);
    if (close < 0) break;
    kept.push(text.slice(at, open));
    at = close + 2;
  }
  kept.push(text.slice(at));
  return kept.join('');
}

/** subject_too_long, subject_all_caps, subject_exclamations. */
export function subjectFindings(subject: string | undefined, at: Where): Finding[] {
  const text = withoutTags(subject ?? '').trim();
  if (!text) return [];
  const found: Finding[] = [];
  const finding = (code: string, message: string): Finding => ({ code, message, ...at, field: 'subject' });
  const length = [...text].length;
  if (length > MAX_SUBJECT_CHARS) {
    found.push({ ...finding('subject_too_long', `the subject is ${length} characters (Liquid tags not counted); most clients cut it after about ${MAX_SUBJECT_CHARS}`), count: length });
  }
  const upper = text.match(/\p{Lu}/gu)?.length ?? 0;
  if (upper >= 5 && !/\p{Ll}/u.test(text)) found.push(finding('subject_all_caps', `the subject is all in capitals ("${length > 80 ? `${[...text].slice(0, 80).join('')}…` : text}"), which reads as shouting and spam filters score`));
  const marks = text.match(/!/g)?.length ?? 0;
  if (marks > 1) found.push({ ...finding('subject_exclamations', `the subject has ${marks} exclamation marks; spam filters score more than one`), count: marks });
  return found;
}

/** missing_preheader (information), preheader_too_long (a warning). */
export function preheaderFindings(preheader: string | undefined, at: Where): ContentFindings {
  const text = withoutTags(preheader ?? '').trim();
  if (!text) {
    return { warnings: [], information: [{ code: 'missing_preheader', message: `${at.assetRef} has no preheader; the inbox shows the body's first text instead`, ...at, field: 'preheader' }] };
  }
  const length = [...text].length;
  if (length <= MAX_PREHEADER_CHARS) return { warnings: [], information: [] };
  const message = `the preheader is ${length} characters (Liquid tags not counted); inboxes show up to about ${MAX_PREHEADER_CHARS}`;
  return { warnings: [{ code: 'preheader_too_long', message, ...at, field: 'preheader', count: length }], information: [] };
}

/** What the HTML rules need, from one pass over the HTML. */
export interface HtmlFacts {
  /** Links whose text names a domain other than their href's, with the line of the link. */
  mismatchedLinks: { text: string; href: string; line: number }[];
  shortenedLinks: { href: string; line: number }[];
  images: number;
  /** Characters of visible text (Liquid tags, <style>, <script>, <head> and comments left out; spaces collapsed). */
  textChars: number;
  /** The line of <html> and its lang, when there is an <html> element. */
  html?: { line: number; lang: string | undefined };
  hasColorSchemeMeta: boolean;
  /** Tables with no role="presentation" (or "none") and no <th> or <caption>, by line. */
  layoutTables: number[];
  /** Headings deeper by more than one level than the previous one: "h1 then h3" and the line. */
  skippedHeadings: { text: string; line: number }[];
}

/** The host of an absolute http(s) URL, lower case, without "www."; undefined for any other. */
export function hostOf(url: string): string | undefined {
  const match = /^\s*https?:\/\/([^/?#:\s]+)/i.exec(url);
  return match ? match[1]!.toLowerCase().replace(/^www\./, '') : undefined;
}

/** The domain a link's text is ("shop.example.com", "https://example.com/x"), when the whole text is a domain or URL. */
function domainIn(text: string): string | undefined {
  const match = /^(?:https?:\/\/)?((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24})(?::\d+)?(?:[/?#]\S*)?$/i.exec(text.trim());
  return match ? match[1]!.toLowerCase().replace(/^www\./, '') : undefined;
}

/** The same site: equal hosts, or one a subdomain of the other. */
const sameSite = (a: string, b: string) => a === b || a.endsWith(`.${b}`) || b.endsWith(`.${a}`);

const HIDDEN = new Set(['style', 'script', 'head', 'title']);
const isTemplated = (href: string) => href.includes('{{') || href.includes('{%');

/** The facts of an HTML part, from one pass of htmlparser2. */
export function readHtml(html: string): HtmlFacts {
  const facts: HtmlFacts = { mismatchedLinks: [], shortenedLinks: [], images: 0, textChars: 0, hasColorSchemeMeta: false, layoutTables: [], skippedHeadings: [] };
  const starts = lineStarts(html);
  const lineOf = (offset: number) => lineAt(starts, offset);
  const tables: { line: number; data: boolean }[] = [];
  let link: { href: string; text: string; line: number } | undefined;
  let hidden = 0;
  let lastHeading = 0;
  let space = true;
  parseHtml(
    html,
    (start) => ({
      onopentag(name, attributes) {
        const line = lineOf(start());
        if (HIDDEN.has(name)) hidden++;
        if (name === 'html') facts.html = { line, lang: attributes.lang?.trim() || undefined };
        if (name === 'meta' && /^(color-scheme|supported-color-schemes)$/i.test(attributes.name ?? '')) facts.hasColorSchemeMeta = true;
        if (name === 'img') facts.images++;
        if (name === 'table') tables.push({ line, data: /^(presentation|none)$/i.test(attributes.role?.trim() ?? '') });
        if ((name === 'th' || name === 'caption') && tables.length) tables[tables.length - 1]!.data = true;
        const level = /^h([1-6])$/.exec(name)?.[1];
        if (level) {
          if (lastHeading && Number(level) > lastHeading + 1) facts.skippedHeadings.push({ text: `h${lastHeading} then ${name}`, line });
          lastHeading = Number(level);
        }
        if (name === 'a') {
          link = { href: attributes.href ?? '', text: '', line };
          const host = isTemplated(link.href) ? undefined : hostOf(link.href);
          if (host && URL_SHORTENERS.includes(host)) facts.shortenedLinks.push({ href: link.href, line });
        }
      },
      ontext(text) {
        if (hidden) return;
        if (link) link.text += text;
        const visible = withoutTags(text).replace(/\s+/g, ' ');
        const trimmed = space ? visible.trimStart() : visible;
        facts.textChars += trimmed.length;
        if (trimmed.length) space = trimmed.endsWith(' ');
      },
      onclosetag(name) {
        if (HIDDEN.has(name) && hidden) hidden--;
        if (name === 'table') {
          const table = tables.pop();
          if (table && !table.data) facts.layoutTables.push(table.line);
        }
        if (name === 'a' && link) {
          const named = domainIn(link.text);
          const host = isTemplated(link.href) ? undefined : hostOf(link.href);
          if (named && host && !sameSite(named, host)) facts.mismatchedLinks.push({ text: link.text.trim(), href: link.href, line: link.line });
          link = undefined;
        }
      },
    }),
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  return facts;
}

/** The first three items with their lines, and "…" when there are more. */
const listed = (items: { text: string; line: number }[]) =>
  `${items.slice(0, 3).map((i) => `${i.text.length > 120 ? `${i.text.slice(0, 120)}…` : i.text} (line ${i.line})`).join(', ')}${items.length > 3 ? ', …' : ''}`;

/**
 * The HTML rules: link_domain_mismatch, url_shortener, image_only_body,
 * low_text_ratio, missing_html_lang, layout_table_role, heading_order
 * (warnings) and missing_color_scheme_meta (information). The document rules
 * (lang, color-scheme) judge a document, an HTML part with an <html> element.
 */
export function htmlContentFindings(html: string | undefined, at: Where): ContentFindings {
  const found: ContentFindings = { warnings: [], information: [] };
  if (!html?.trim()) return found;
  const facts = readHtml(html);
  const finding = (code: string, message: string, items: { line: number }[] = [], count?: number): Finding => ({
    code, message, ...at, field: 'html', ...(items[0] ? { line: items[0].line } : {}), ...(count === undefined ? {} : { count }),
  });
  const itemized = (code: string, items: { text: string; line: number }[], what: string) =>
    items.length ? [finding(code, `${plural(items.length, 'link')} ${what}: ${listed(items)}`, items, items.length)] : [];
  found.warnings.push(
    ...itemized('link_domain_mismatch', facts.mismatchedLinks.map((l) => ({ text: `"${l.text}" goes to ${l.href}`, line: l.line })), 'whose text names another domain than the one they go to'),
    ...itemized('url_shortener', facts.shortenedLinks.map((l) => ({ text: l.href, line: l.line })), 'through a URL shortener, which spam filters distrust'),
  );
  if (facts.images && facts.textChars < IMAGE_ONLY_TEXT_CHARS) {
    found.warnings.push(finding('image_only_body', `the body is ${plural(facts.images, 'image')} with ${plural(facts.textChars, 'character')} of text; spam filters score image-only mail, and blocked images leave it blank`, [], facts.images));
  } else if (facts.images >= 2 && facts.textChars / facts.images < MIN_TEXT_CHARS_PER_IMAGE) {
    found.warnings.push(finding('low_text_ratio', `${plural(facts.textChars, 'character')} of text for ${plural(facts.images, 'image')}, fewer than ${MIN_TEXT_CHARS_PER_IMAGE} per image`, [], facts.images));
  }
  if (facts.html && !facts.html.lang) {
    found.warnings.push(finding('missing_html_lang', '<html> has no lang attribute; screen readers guess the language from it', [facts.html]));
  }
  if (facts.layoutTables.length) {
    const lines = facts.layoutTables.map((line) => ({ line }));
    found.warnings.push(finding('layout_table_role', `${plural(lines.length, 'layout table')} without role="presentation" (no <th> or <caption>), which screen readers announce as data; first on line ${lines[0]!.line}`, lines, lines.length));
  }
  if (facts.skippedHeadings.length) {
    found.warnings.push(finding('heading_order', `headings skip a level: ${listed(facts.skippedHeadings)}`, facts.skippedHeadings, facts.skippedHeadings.length));
  }
  if (facts.html && !facts.hasColorSchemeMeta) {
    found.information.push(finding('missing_color_scheme_meta', 'no <meta name="color-scheme"> (e.g. content="light dark"): dark-mode clients may invert the colours', [facts.html]));
  }
  return found;
}
