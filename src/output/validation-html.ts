/**
 * `convx validate -o html`: a validation as one page to keep beside a CI run (a preview artifact),
 * made by the reports' page writer (html.ts pageDocument: the same head, strict policy and style;
 * escape.ts for every text). The counts, the findings grouped by severity with where each is, the
 * comparison with a baseline, and each rendered sample in a sandboxed frame: `srcdoc` with `sandbox`
 * and nothing allowed (no script, no form, no navigation), a policy of its own that loads nothing,
 * and its remote images replaced by a placeholder and listed. Pure: the same bytes for the same input.
 */
import type { BaselineComparison } from '../model/baseline.js';
import { baselineReason } from '../model/baseline.js';
import type { Finding, ValidateResponse } from '../model/validation.js';
import { plural } from '../words.js';
import { escapeHtml } from './escape.js';
import { PAGE_CSP, pageDocument } from './html.js';

/** What stands in for a remote image: a grey box that says so (an inline SVG, which the policy allows). */
export const BLOCKED_IMAGE =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='120' height='40'%3E%3Crect width='120' height='40' fill='%23ddd' stroke='%23888'/%3E%3Ctext x='60' y='25' font-size='11' text-anchor='middle' fill='%23333'%3Eremote image blocked%3C/text%3E%3C/svg%3E";

/** An attribute that loads a resource, with its value (quoted or bare). */
const LOADING_ATTRIBUTE = /(\s)(src|srcset|background|poster|href)(\s*=\s*)("[^"]*"|'[^']*'|[^\s"'>]+)/gi;

const unquoted = (value: string) => (/^["']/.test(value) ? value.slice(1, -1) : value);

/** Whether a code unit is a letter of a tag name's first character ([a-zA-Z]), or of the rest ([a-zA-Z0-9-]). */
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isNameChar = (c: number) => isLetter(c) || (c >= 48 && c <= 57) || c === 45;
const GT = 62;
const DOUBLE = 34;
const SINGLE = 39;
const CLOSE = 41;

/**
 * Every start tag of html, left to right, as `/<([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g`
 * matches them (quoted values may hold ">"; a quote left open ends no tag), each replaced by what
 * `replace` makes of its name and attributes; in time linear in the length. The pattern itself takes
 * time that grows with the square of the length where tags never close (100,000 "<a": 79 s): from
 * each "<" it reads to the end. Here where the attributes from each position end is worked out once,
 * from the end backwards (the pattern reads them one way only: its three kinds of step start with
 * different characters).
 */
export function replaceStartTags(html: string, replace: (name: string, attributes: string) => string): string {
  const n = html.length;
  // tagEnd[i]: the ">" that attributes read from i end at, or -1 (the end reached, or a quote left open)
  const tagEnd = new Int32Array(n + 1);
  tagEnd[n] = -1;
  let nextDouble = -1;
  let nextSingle = -1;
  for (let i = n - 1; i >= 0; i--) {
    const c = html.charCodeAt(i);
    if (c === GT) tagEnd[i] = i;
    else if (c === DOUBLE) tagEnd[i] = nextDouble < 0 ? -1 : tagEnd[nextDouble + 1]!;
    else if (c === SINGLE) tagEnd[i] = nextSingle < 0 ? -1 : tagEnd[nextSingle + 1]!;
    else tagEnd[i] = tagEnd[i + 1]!;
    if (c === DOUBLE) nextDouble = i;
    else if (c === SINGLE) nextSingle = i;
  }
  let out = '';
  let copied = 0;
  let at = html.indexOf('<');
  while (at >= 0 && at < n) {
    let end = -1;
    let nameEnd = at + 1;
    if (nameEnd < n && isLetter(html.charCodeAt(nameEnd))) {
      while (nameEnd < n && isNameChar(html.charCodeAt(nameEnd))) nameEnd++;
      end = tagEnd[nameEnd]!;
    }
    if (end < 0) {
      at = html.indexOf('<', at + 1);
      continue;
    }
    out += html.slice(copied, at) + replace(html.slice(at + 1, nameEnd), html.slice(nameEnd, end));
    copied = end + 1;
    at = html.indexOf('<', copied);
  }
  return out + html.slice(copied);
}

/** Whether a code unit is white space as a pattern's \s takes it. */
const isSpace = (c: number) => /\s/.test(String.fromCharCode(c));
/** Whether "data:" starts at i, in any case (as the pattern's i flag takes it). */
const dataAt = (text: string, i: number) => /^data:/i.test(text.slice(i, i + 5));
/** Where a url( may start, in any case. */
const URL_OPEN = /url\(/gi;

/**
 * Every CSS url(…) of text, left to right, as `/url\(\s*(['"]?)(?!data:)([^'")]*)\1\s*\)/gi` matches
 * them (the address: group 2), each replaced by what `replace` makes of its address; in time linear
 * in the length. The pattern takes time that grows with the square of the length where the
 * parenthesis never closes (50,000 "url(": 66 s). Its backtracking reaches only two other matches,
 * both kept here: an address after an opening quote must end at the same quote, and "data:" after
 * white space is an address where the pattern gives one character of that space back to it.
 */
export function replaceCssUrls(text: string, replace: (address: string) => string): string {
  const n = text.length;
  // stop[i]: the first ' " or ) at or after i, or n
  const stop = new Int32Array(n + 1);
  stop[n] = n;
  for (let i = n - 1; i >= 0; i--) {
    const c = text.charCodeAt(i);
    stop[i] = c === DOUBLE || c === SINGLE || c === CLOSE ? i : stop[i + 1]!;
  }
  const next = (from: number) => {
    URL_OPEN.lastIndex = from;
    return URL_OPEN.exec(text)?.index ?? -1;
  };
  let out = '';
  let copied = 0;
  let at = next(0);
  while (at >= 0) {
    let match: { address: string; end: number } | undefined;
    const open = at + 4;
    let a = open;
    while (a < n && isSpace(text.charCodeAt(a))) a++;
    const first = text.charCodeAt(a);
    if (first === DOUBLE || first === SINGLE) {
      // quoted: the address ends at the next ' " or ), which must be the same quote, then space and ")"
      const b = stop[a + 1]!;
      if (!dataAt(text, a + 1) && b < n && text.charCodeAt(b) === first) {
        let c = b + 1;
        while (c < n && isSpace(text.charCodeAt(c))) c++;
        if (c < n && text.charCodeAt(c) === CLOSE) match = { address: text.slice(a + 1, b), end: c + 1 };
      }
    } else {
      // bare: the address runs to the first ' " or ), which must be ")"; a bare data: is none, unless
      // space came before it (the pattern then takes the address from the last character of that space)
      const b = stop[a]!;
      const from = !dataAt(text, a) ? a : a > open ? a - 1 : -1;
      if (from >= 0 && b < n && text.charCodeAt(b) === CLOSE) match = { address: text.slice(from, b), end: b + 1 };
    }
    if (!match) {
      at = next(at + 1);
      continue;
    }
    out += text.slice(copied, at) + replace(match.address);
    copied = match.end;
    at = next(copied);
  }
  return out + text.slice(copied);
}

/**
 * The HTML with every resource it would load replaced: an image's source by BLOCKED_IMAGE (the
 * original kept in data-blocked-src), srcset, background, poster and a <link>'s href left out, CSS url() emptied; and
 * the addresses so replaced, in order, each once. data: sources stay.
 */
export function blockRemoteImages(html: string): { html: string; blocked: string[] } {
  const blocked = new Set<string>();
  const replaced = replaceStartTags(html, (name, attributes) => {
    const kept = attributes.replace(LOADING_ATTRIBUTE, (whole, space: string, attribute: string, equals: string, value: string) => {
      const address = unquoted(value);
      if (/^\s*data:/i.test(address) || (attribute.toLowerCase() === 'href' && name.toLowerCase() !== 'link')) return whole;
      if (address.trim() !== '') blocked.add(address.trim());
      if (attribute.toLowerCase() === 'src' && name.toLowerCase() === 'img') {
        return `${space}src${equals}"${BLOCKED_IMAGE}" data-blocked-src="${escapeHtml(address)}"`;
      }
      return `${space}data-blocked-${attribute.toLowerCase()}="${escapeHtml(address)}"`;
    });
    return `<${name}${kept}>`;
  });
  const styled = replaceCssUrls(replaced, (address) => {
    if (address.trim() !== '') blocked.add(address.trim());
    return 'url(data:,)';
  });
  return { html: styled, blocked: [...blocked] };
}

/** The frame's own document: the sample's HTML after a policy that loads nothing but inline styles and data: images. */
function frameDocument(html: string): string {
  return `<!doctype html><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${escapeHtml(PAGE_CSP)}">${html}`;
}

const STYLE = `
h2 { font-size: 18px; margin: 24px 0 8px; }
h3 { font-size: 15px; margin: 16px 0 4px; }
.errors h2 { color: #a00; }
.warnings h2 { color: #8a5a00; }
.verdict { font-weight: 600; }
table.audience { width: auto; min-width: 320px; }
table.audience th { border-bottom: 1px solid #ccc; font-weight: normal; }
.fail { color: #a00; }
.sample iframe { display: block; width: 100%; height: 480px; border: 1px solid #777; background: #fff; }
.blocked { font-size: 12px; color: #333; }
pre { white-space: pre-wrap; font-size: 12px; margin: 2px 0 8px 16px; }
@media print { .sample iframe { height: 320px; } }
`;

/** What the page says of its making. */
export interface ValidationPageHeader {
  /** The request file as the command line named it ("stdin" for -). */
  request: string;
  /** convx's version. */
  version: string;
  /** Why the run fails ("1 error (asset_not_found)"), or undefined when it passes. */
  failure?: string | undefined;
}

/** Where a finding is, as a person reads it: file and line, asset, language, part, contact. */
export function findingPlace(f: Finding): string {
  const file = f.file !== undefined ? `${f.file}${f.line !== undefined ? `:${f.line}` : ''}` : undefined;
  const line = f.file === undefined && f.line !== undefined ? `line ${f.line}` : undefined;
  return [file, f.assetRef, f.language ? `language ${f.language}` : undefined, f.field, line, f.contactId ? `contact ${f.contactId}` : undefined]
    .filter(Boolean)
    .join(', ');
}

/** A figure's row: the name and the number, its exact JSON in data-value. */
const figureRow = (field: string, name: string, value: number) =>
  `<tr><th scope="row">${escapeHtml(name)}</th><td class="num" data-field="${escapeHtml(field)}" data-value="${JSON.stringify(value)}">${value}</td></tr>`;

function audienceTable(response: ValidateResponse): string {
  const { audience } = response;
  const b = audience.suppressionBreakdown;
  const rows: [string, string, number][] = [
    ['intended', 'Intended', audience.intended],
    ['suppressed', 'Suppressed', audience.suppressed],
    ['suppressionBreakdown.unsubscribed', 'unsubscribed', b.unsubscribed],
    ['suppressionBreakdown.invalidEmail', 'invalid e-mail', b.invalidEmail],
    ['suppressionBreakdown.noConsent', 'no consent', b.noConsent],
    ['deliverable', 'Deliverable', audience.deliverable],
  ];
  const languages = response.languages.map(
    (l) =>
      `<tr data-language="${escapeHtml(l.language)}"><td>${escapeHtml(l.language)}</td><td class="num" data-value="${l.recipients}">${l.recipients}</td><td>${escapeHtml(l.assetRef)}</td></tr>`,
  );
  return [
    '<h2>Audience</h2>',
    `<table class="audience">\n<tbody>\n${rows.map(([field, name, value]) => figureRow(field, name, value)).join('\n')}\n</tbody>\n</table>`,
    ...(languages.length
      ? ['<h2>Languages</h2>', `<table class="languages">\n<thead><tr><th scope="col">Language</th><th class="num" scope="col">Recipients</th><th scope="col">Asset</th></tr></thead>\n<tbody>\n${languages.join('\n')}\n</tbody>\n</table>`]
      : []),
  ].join('\n');
}

/** A section per severity that has findings: code, message and where, in the response's order. */
function findingSections(response: ValidateResponse): string[] {
  const render = response.render as unknown as Record<string, Finding[] | undefined>;
  const severities: [string, string][] = [
    ['errors', 'Errors'],
    ['warnings', 'Warnings'],
    ['information', 'Information'],
  ];
  const sections = severities.flatMap(([list, title]) => {
    const findings = render[list] ?? [];
    if (!findings.length) return [];
    const rows = findings.map(
      (f) =>
        `<tr data-code="${escapeHtml(f.code)}"${f.file !== undefined ? ` data-file="${escapeHtml(f.file)}"` : ''}${f.line !== undefined ? ` data-line="${f.line}"` : ''}><td><code>${escapeHtml(f.code)}</code></td><td>${escapeHtml(f.message)}</td><td>${escapeHtml(findingPlace(f))}</td></tr>`,
    );
    return [
      `<section class="findings ${list}" data-severity="${list}">`,
      `<h2>${title} (${findings.length})</h2>`,
      `<table>\n<thead><tr><th scope="col">Code</th><th scope="col">Message</th><th scope="col">Where</th></tr></thead>\n<tbody>\n${rows.join('\n')}\n</tbody>\n</table>`,
      '</section>',
    ];
  });
  return sections.length ? sections : ['<h2>Findings</h2>', '<p class="empty">No findings.</p>'];
}

/** The comparison with the baseline: "same as baseline", or each change (and its diff), those that fail marked. */
function baselineSection(comparison: BaselineComparison | undefined): string[] {
  if (!comparison) return [];
  const title = `<h2>Baseline ${escapeHtml(comparison.file)}</h2>`;
  if (comparison.same) return [title, '<p class="baseline-same">Same as baseline.</p>'];
  const items = comparison.changes.map((c) => {
    const diff = c.diff?.length ? `<pre>${escapeHtml(c.diff.join('\n'))}</pre>` : '';
    return `<li data-kind="${c.kind}"${c.fails ? ' class="fail" data-fails="true"' : ''}>${escapeHtml(c.message)}${diff}</li>`;
  });
  const reason = baselineReason(comparison);
  return [title, `<ul class="baseline">\n${items.join('\n')}\n</ul>`, ...(reason ? [`<p class="verdict fail">Not ready: ${escapeHtml(reason)}</p>`] : [])];
}

/** Each sample in its sandboxed frame, its subject above and its blocked images listed below. */
function sampleSections(response: ValidateResponse): string[] {
  const { samples } = response.render;
  if (!samples.length) return [];
  const sections = samples.map((s) => {
    const whole = s.html !== undefined;
    const { html, blocked } = blockRemoteImages(whole ? s.html! : s.htmlExcerpt);
    const note = whole ? '' : '<p class="note">The HTML excerpt only: the validation did not return the whole HTML (options.preview).</p>';
    const list = blocked.length
      ? `<div class="blocked"><p>Remote images blocked (${blocked.length}):</p><ul>${blocked.map((b) => `<li><code>${escapeHtml(b)}</code></li>`).join('')}</ul></div>`
      : '';
    const name = `${s.language}, contact ${s.contactId}`;
    return [
      `<section class="sample" data-language="${escapeHtml(s.language)}" data-contact="${escapeHtml(s.contactId)}">`,
      `<h3>${escapeHtml(name)}</h3>`,
      `<p><strong>Subject:</strong> <span class="subject">${escapeHtml(s.subject)}</span></p>`,
      note,
      `<iframe sandbox="" referrerpolicy="no-referrer" title="${escapeHtml(`The sample for ${name}`)}" srcdoc="${escapeHtml(frameDocument(html))}"></iframe>`,
      list,
      '</section>',
    ]
      .filter(Boolean)
      .join('\n');
  });
  return [`<h2>Samples (${samples.length})</h2>`, ...sections];
}

/** A validation as a page: the verdict, the counts, the baseline, the findings and the samples. */
export function validationHtml(response: ValidateResponse, header: ValidationPageHeader, comparison?: BaselineComparison): string {
  const { errors, warnings } = response.render;
  const reasons = [header.failure, baselineReason(comparison)].filter(Boolean);
  const verdict = reasons.length ? `not ready: ${reasons.join(' and ')}` : 'ready';
  return pageDocument({
    title: `Delivery validation, ${header.request}`,
    heading: 'Delivery validation',
    version: header.version,
    meta: [
      ['Request', header.request],
      ['Verdict', verdict],
      ['Deliverable', `${response.audience.deliverable} of ${response.audience.intended}`],
      ['Findings', `${plural(errors.length, 'error')}, ${plural(warnings.length, 'warning')}`],
    ],
    body: [
      `<p class="verdict${reasons.length ? ' fail' : ''}" data-verdict="${reasons.length ? 'not-ready' : 'ready'}">${escapeHtml(verdict[0]!.toUpperCase() + verdict.slice(1))}</p>`,
      audienceTable(response),
      ...baselineSection(comparison),
      ...findingSections(response),
      ...sampleSections(response),
    ],
    footer: `Made by ${escapeHtml(`convx ${header.version}`)}. Each sample is shown in a sandboxed frame that runs no script and loads nothing.`,
    style: STYLE,
  });
}
