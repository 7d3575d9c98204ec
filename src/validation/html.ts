/** Checks of an e-mail's HTML with a real parser: links, images, unsubscribe, size. */
import { parseHtml, type ParseExtent } from './html-parser.js';
import { GMAIL_CLIP_BYTES } from '../model/validation.js';

export interface HtmlReport {
  bytes: number;
  tooLarge: boolean;
  hasUnsubscribe: boolean;
  imagesWithoutAlt: string[];
  insecureLinks: string[];
  emptyLinks: number;
  placeholderLinks: string[];
  relativeLinks: string[];
  /** How far the checks read the HTML (html-parser.ts: a depth or a length stops them). */
  extent: ParseExtent;
}

/** A {{ … }} or {% … %} in a value (indexOf, not a lazy regex: that is quadratic on many unclosed "{{"). */
function hasTemplateValue(value: string): boolean {
  const closed = (open: string, close: string) => {
    const at = value.indexOf(open);
    return at >= 0 && value.indexOf(close, at + 2) >= 0;
  };
  return closed('{{', '}}') || closed('{%', '%}');
}
/** Merge tags of other systems and obvious stand-ins: [Unsubscribe], <%url%>, *|URL|*, example.com. */
const PLACEHOLDER = /^\[[^\]]*\]$|^<%.*%>$|^\*\|.*\|\*$|^%%.*%%$|\bexample\.(com|org|net)\b|^https?:\/\/(www\.)?$/i;

export function checkHtml(html: string): HtmlReport {
  const report: HtmlReport = {
    bytes: Buffer.byteLength(html, 'utf8'),
    tooLarge: false,
    hasUnsubscribe: false,
    imagesWithoutAlt: [],
    insecureLinks: [],
    emptyLinks: 0,
    placeholderLinks: [],
    relativeLinks: [],
    extent: { whole: true },
  };
  report.tooLarge = report.bytes > GMAIL_CLIP_BYTES;
  let link: { href: string; text: string } | undefined;
  report.extent = parseHtml(
    html,
    () => ({
      onopentag(name, attributes) {
        if (name === 'img' && !('alt' in attributes)) report.imagesWithoutAlt.push(attributes.src ?? '(no src)');
        if (name === 'a') {
          link = { href: (attributes.href ?? '').trim(), text: '' };
          classify(link.href, report);
        }
      },
      ontext(text) {
        if (link) link.text += text;
      },
      onclosetag(name) {
        if (name === 'a' && link) {
          if (/unsubscribe|opt[-\s]?out|odhl[aá]sit|abbestellen|darse de baja/i.test(`${link.href} ${link.text}`)) report.hasUnsubscribe = true;
          link = undefined;
        }
      },
    }),
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  return report;
}

function classify(href: string, report: HtmlReport): void {
  if (hasTemplateValue(href)) return; // filled in per recipient
  if (href === '' || href === '#') {
    report.emptyLinks++;
    return;
  }
  if (PLACEHOLDER.test(href) || /^mailto:\s*$/i.test(href)) {
    report.placeholderLinks.push(href);
    return;
  }
  if (/^http:\/\//i.test(href)) {
    report.insecureLinks.push(href);
    return;
  }
  if (/^(https:|mailto:|tel:|sms:)/i.test(href)) return;
  if (/^[a-z][a-z0-9+.-]*:/i.test(href)) {
    report.placeholderLinks.push(href); // javascript:, data:, file: and the like do not belong in an e-mail
    return;
  }
  report.relativeLinks.push(href); // "facebook.com" or "/page": no base URL in an inbox
}

/** The body of rendered HTML as a short fragment for a sample. Linear in the HTML, which a template can make large. */
export function excerpt(html: string, length = 400): string {
  return cut(withoutHidden(bodyOf(html)).replace(/\s+/g, ' ').trim(), length);
}

/** The first `length` characters of a text, and "…" when there was more. */
export function cut(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length)}…` : text;
}

/** Where `needle` (ASCII, lower case) is in `text` from `from` on, in any case; -1 if nowhere. */
function indexOfAnyCase(text: string, needle: string, from = 0): number {
  const pattern = new RegExp(needle.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'), 'gi');
  pattern.lastIndex = from;
  return pattern.exec(text)?.index ?? -1;
}

/** What is between <body …> and </body> (or the end); the whole HTML without a <body> tag. */
function bodyOf(html: string): string {
  const open = indexOfAnyCase(html, '<body');
  const start = open < 0 ? -1 : html.indexOf('>', open);
  if (start < 0) return html;
  const close = indexOfAnyCase(html, '</body>', start);
  return html.slice(start + 1, close < 0 ? undefined : close);
}

/** The HTML without comments, <style> and <script> elements; an opener never closed stays, as text. */
function withoutHidden(html: string): string {
  const opener = /<!--|<style|<script/gi;
  const unclosed = new Set<string>();
  const kept: string[] = [];
  let at = 0;
  for (let match = opener.exec(html); match; match = opener.exec(html)) {
    const kind = match[0].toLowerCase();
    if (unclosed.has(kind)) continue;
    const closer = kind === '<!--' ? '-->' : `</${kind.slice(1)}>`;
    const end = indexOfAnyCase(html, closer, match.index + kind.length);
    if (end < 0) {
      unclosed.add(kind); // no closer after this one, so none after a later one either
      continue;
    }
    kept.push(html.slice(at, match.index));
    at = end + closer.length;
    opener.lastIndex = at;
  }
  kept.push(html.slice(at));
  return kept.join('');
}
