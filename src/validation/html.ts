/** Checks of an e-mail's HTML with a real parser: links, images, unsubscribe, size. */
import { Parser } from 'htmlparser2';
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
}

const TEMPLATE_VALUE = /{{[\s\S]*?}}|{%[\s\S]*?%}/;
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
  };
  report.tooLarge = report.bytes > GMAIL_CLIP_BYTES;
  let link: { href: string; text: string } | undefined;
  const parser = new Parser(
    {
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
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  return report;
}

function classify(href: string, report: HtmlReport): void {
  if (TEMPLATE_VALUE.test(href)) return; // filled in per recipient
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

/** The body of rendered HTML as a short fragment for a sample. */
export function excerpt(html: string, length = 400): string {
  const body = /<body[^>]*>([\s\S]*?)(<\/body>|$)/i.exec(html)?.[1] ?? html;
  const compact = body
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<(style|script)[^>]*>[\s\S]*?<\/\1>/gi, '')
    .replace(/\s+/g, ' ')
    .trim();
  return compact.length > length ? `${compact.slice(0, length)}…` : compact;
}
