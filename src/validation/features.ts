/**
 * The HTML and CSS features a template uses, named as caniemail names them
 * (`css-display-flex`, `html-svg`, `image-webp`…), each with the line it is
 * first used on and how often. One pass of htmlparser2 over the HTML and one
 * of a small tokenizer over each stylesheet and style attribute: linear in the
 * template, which the template size limit bounds. Slugs that the data does not
 * have are dropped by the caller (src/validation/clients.ts).
 */
import { parseHtml } from './html-parser.js';
import { lineAt, lineStarts } from './line-numbers.js';

/** Where a feature is first used (1-based line) and how many times. */
export interface FeatureUse {
  line: number;
  count: number;
}

/** Elements whose caniemail slug is not `html-<name>`. */
const ELEMENT_SLUGS: Record<string, string> = {
  h1: 'html-h1-h6', h2: 'html-h1-h6', h3: 'html-h1-h6', h4: 'html-h1-h6', h5: 'html-h1-h6', h6: 'html-h1-h6',
  ul: 'html-lists', ol: 'html-lists', dl: 'html-lists',
  map: 'html-image-maps', area: 'html-image-maps',
  article: 'html-semantics', aside: 'html-semantics', details: 'html-semantics', figcaption: 'html-semantics',
  figure: 'html-semantics', footer: 'html-semantics', header: 'html-semantics', main: 'html-semantics',
  mark: 'html-semantics', nav: 'html-semantics', section: 'html-semantics', summary: 'html-semantics', time: 'html-semantics',
};
/** Attributes whose caniemail slug is not `html-<name>`. */
const ATTRIBUTE_SLUGS: Record<string, string> = { srcset: 'html-srcset', sizes: 'html-srcset', loading: 'html-loading-attribute', inert: 'css-inert-attribute' };
/** Image formats by file extension. */
const IMAGE_SLUGS: Record<string, string> = {
  png: 'image-png', apng: 'image-apng', gif: 'image-gif', jpg: 'image-jpg', jpeg: 'image-jpg', webp: 'image-webp', avif: 'image-avif',
  svg: 'image-svg', bmp: 'image-bmp', tif: 'image-tiff', tiff: 'image-tiff', ico: 'image-ico', heic: 'image-heif', heif: 'image-heif', hdr: 'image-hdr', mp4: 'image-mp4',
};

/** The slugs of one element with its attributes. */
export function elementSlugs(name: string, attributes: Record<string, string>): string[] {
  const slugs = [ELEMENT_SLUGS[name] ?? `html-${name}`];
  const type = (attributes.type ?? '').toLowerCase();
  if (name === 'input' && type) slugs.push(`html-input-${type}`);
  if (name === 'button' && (type === 'reset' || type === 'submit')) slugs.push(`html-button-${type}`);
  for (const attribute of Object.keys(attributes)) {
    if (attribute === 'style') continue;
    slugs.push(ATTRIBUTE_SLUGS[attribute] ?? `html-${attribute}`);
  }
  const href = (attributes.href ?? '').trim().toLowerCase();
  if (name === 'a' && href.startsWith('#') && href.length > 1) slugs.push('html-anchor-links');
  if (name === 'a' && href.startsWith('mailto:')) slugs.push('html-mailto-links');
  if (name === 'meta' && (attributes.name ?? '').toLowerCase() === 'color-scheme') slugs.push('html-meta-color-scheme');
  const src = (attributes.src ?? '').trim().toLowerCase();
  if (name === 'img' && src.startsWith('data:image/')) slugs.push('image-base64');
  else if (name === 'img') {
    const extension = /\.([a-z0-9]{2,5})(?:[?#]|$)/.exec(src)?.[1];
    if (extension && IMAGE_SLUGS[extension]) slugs.push(IMAGE_SLUGS[extension]);
  }
  return slugs;
}

/** Properties whose slug is not `css-<property>` (longhands of margin, padding and border have theirs below). */
const PROPERTY_SLUGS: Record<string, string> = {
  gap: 'css-gap', 'column-gap': 'css-gap', 'row-gap': 'css-gap',
  'grid-template-columns': 'css-grid-template', 'grid-template-rows': 'css-grid-template', 'grid-template-areas': 'css-grid-template',
  left: 'css-left-right-top-bottom', right: 'css-left-right-top-bottom', top: 'css-left-right-top-bottom', bottom: 'css-left-right-top-bottom',
  'border-top-left-radius': 'css-border-radius', 'border-top-right-radius': 'css-border-radius',
  'border-bottom-left-radius': 'css-border-radius', 'border-bottom-right-radius': 'css-border-radius',
  'column-width': 'css-column-layout-properties', 'column-rule': 'css-column-layout-properties', 'column-span': 'css-column-layout-properties',
  'margin-block': 'css-margin-inline-block', 'margin-inline': 'css-margin-inline-block',
  'padding-block': 'css-padding-inline-block', 'padding-inline': 'css-padding-inline-block',
  'margin-block-start': 'css-margin-block-start-end', 'margin-block-end': 'css-margin-block-start-end',
  'margin-inline-start': 'css-margin-inline-start-end', 'margin-inline-end': 'css-margin-inline-start-end',
  'padding-block-start': 'css-padding-block-start-end', 'padding-block-end': 'css-padding-block-start-end',
  'padding-inline-start': 'css-padding-inline-start-end', 'padding-inline-end': 'css-padding-inline-start-end',
  'block-size': 'css-block-inline-size', 'border-block': 'css-border-inline-block', 'border-inline': 'css-border-inline-block',
  'scroll-snap-type': 'css-scroll-snap', 'scroll-snap-align': 'css-scroll-snap',
};
const SIDE_LONGHAND = /^(margin|padding|border)-(top|right|bottom|left)(-(width|style|color))?$/;
const FUNCTION_SLUGS: Record<string, string> = {
  clamp: 'css-function-clamp', min: 'css-function-min', max: 'css-function-max', 'light-dark': 'css-function-light-dark',
  'linear-gradient': 'css-linear-gradient', 'radial-gradient': 'css-radial-gradient', 'conic-gradient': 'css-conic-gradient',
  rgb: 'css-rgb', rgba: 'css-rgba', calc: 'css-unit-calc', var: 'css-variables',
  lch: 'css-modern-color', oklch: 'css-modern-color', lab: 'css-modern-color', oklab: 'css-modern-color',
};
const UNITS = new Set(['px', 'em', 'rem', 'pt', 'vh', 'vw', 'vmin', 'vmax', 'ch', 'ex', 'cm', 'mm', 'in', 'pc']);

/** The slugs of one declaration `property: value`. */
export function declarationSlugs(property: string, value: string): string[] {
  const name = property.trim().toLowerCase();
  const lower = value.toLowerCase();
  if (name.startsWith('--')) return ['css-variables'];
  const side = SIDE_LONGHAND.exec(name);
  const slugs = [PROPERTY_SLUGS[name] ?? (side ? `css-${side[1]}` : `css-${name}`)];
  if (name === 'display') {
    const display = lower.replace(/!important/, '').trim();
    if (display === 'flex' || display === 'inline-flex') slugs.push('css-display-flex');
    else if (display === 'grid' || display === 'inline-grid') slugs.push('css-display-grid');
    else if (display === 'none') slugs.push('css-display-none');
  }
  if (name === 'flex-direction' && lower.includes('column')) slugs.push('css-flex-direction');
  if (name === 'flex-wrap' && lower.includes('wrap') && !lower.includes('nowrap')) slugs.push('css-flex-wrap');
  if (name.startsWith('font') && /\b(system-ui|ui-serif|ui-sans-serif|ui-rounded|ui-monospace)\b/.test(lower)) slugs.push('css-sytem-ui');
  if (lower.includes('!important')) slugs.push('css-important');
  if (/\b(fit-content|min-content|max-content)\b/.test(lower)) slugs.push('css-intrinsic-size');
  // a name's run is read once, from its start (unanchored, each letter of a long run began a scan of the rest)
  for (const match of lower.matchAll(/(?<![a-z-])([a-z-]+)\(/g)) {
    const slug = FUNCTION_SLUGS[match[1]!];
    if (slug) slugs.push(slug);
  }
  for (const match of lower.matchAll(/\d(%|[a-z]+)/g)) {
    if (match[1] === '%') slugs.push('css-unit-percent');
    else if (UNITS.has(match[1]!)) slugs.push(`css-unit-${match[1]}`);
  }
  return slugs;
}

/** The slugs of a selector: pseudo-classes and -elements, attribute selectors and combinators. */
export function selectorSlugs(selector: string): string[] {
  const slugs: string[] = [];
  const text = selector.toLowerCase();
  for (const match of text.matchAll(/(::?)([a-z-]+)/g)) {
    const name = match[2]!;
    if (match[1] === '::' || ['before', 'after', 'first-letter', 'first-line'].includes(name)) slugs.push(`css-pseudo-element-${name}`);
    else slugs.push(name === 'lang' ? 'css-pseudo-class-lang' : `css-pseudo-class-${name}`);
  }
  if (text.includes('[')) slugs.push('css-selector-attribute');
  if (text.includes('>')) slugs.push('css-selector-child');
  if (text.includes('+')) slugs.push('css-selector-adjacent-sibling');
  if (text.includes('~')) slugs.push('css-selector-general-sibling');
  if (text.includes('*')) slugs.push('css-selector-universal');
  if (text.includes(',')) slugs.push('css-selector-grouping');
  return slugs;
}

/** Media features of an @media prelude with a slug of their own. */
const MEDIA_FEATURES: [RegExp, string][] = [
  [/prefers-color-scheme/, 'css-at-media-prefers-color-scheme'],
  [/prefers-reduced-motion/, 'css-at-media-prefers-reduced-motion'],
  [/orientation/, 'css-at-media-orientation'],
  [/\bhover\b|any-hover/, 'css-at-media-hover'],
  [/device-pixel-ratio|resolution/, 'css-at-media-device-pixel-ratio'],
];

/** The slugs of an at-rule's name and prelude (`@media (prefers-color-scheme: dark)`). */
export function atRuleSlugs(rule: string): string[] {
  const text = rule.toLowerCase();
  const name = /^@([a-z-]+)/.exec(text)?.[1];
  if (!name) return [];
  const slugs = [`css-at-${name}`];
  if (name === 'media') for (const [pattern, slug] of MEDIA_FEATURES) if (pattern.test(text)) slugs.push(slug);
  return slugs;
}

/**
 * The slugs of a stylesheet, each with its offset in `css`: one pass that cuts it
 * at `{`, `;` and `}` (outside comments and strings); a piece before `{` is a
 * selector or an at-rule prelude, one before `;` or `}` a declaration.
 */
export function stylesheetSlugs(css: string, report: (slug: string, offset: number) => void): void {
  const piece = { parts: [] as string[], from: 0, offset: -1 };
  const reportPiece = (text: string, opener: boolean) => {
    const offset = piece.offset;
    if (text.startsWith('@')) for (const slug of atRuleSlugs(text)) report(slug, offset);
    else if (opener && text) for (const slug of selectorSlugs(text)) report(slug, offset);
    else if (text.includes(':')) {
      const colon = text.indexOf(':');
      for (const slug of declarationSlugs(text.slice(0, colon), text.slice(colon + 1))) report(slug, offset);
    }
  };
  let quote = '';
  for (let i = 0; i < css.length; i++) {
    const c = css[i]!;
    if (quote) {
      if (c === quote) quote = '';
      else if (c === '\\') i++;
      continue;
    }
    if (c === '/' && css[i + 1] === '*') {
      // A comment is no part of the piece it is in: the text before it is kept, and the piece goes on after it.
      report('css-comments', i);
      piece.parts.push(css.slice(piece.from, i));
      const end = css.indexOf('*/', i + 2);
      i = end < 0 ? css.length : end + 1;
      piece.from = i + 1;
    } else if (c === '{' || c === ';' || c === '}') {
      piece.parts.push(css.slice(piece.from, i));
      reportPiece(piece.parts.join('').trim(), c === '{');
      Object.assign(piece, { parts: [], from: i + 1, offset: -1 });
    } else {
      if (c === '"' || c === "'") quote = c;
      if (piece.offset < 0 && !/\s/.test(c)) piece.offset = i;
    }
  }
}

/** The slugs of a style attribute's declarations. */
function styleAttributeSlugs(style: string): string[] {
  const slugs: string[] = [];
  stylesheetSlugs(`${style};`, (slug) => slugs.push(slug));
  return slugs;
}

/** Every feature the HTML uses, by slug, with its first line and count. */
export function htmlFeatures(html: string): Map<string, FeatureUse> {
  const starts = lineStarts(html);
  const used = new Map<string, FeatureUse>();
  const use = (slug: string, offset: number) => {
    const found = used.get(slug);
    if (found) found.count++;
    else used.set(slug, { line: lineAt(starts, offset), count: 1 });
  };
  let style: { start: number; chunks: string[] } | undefined;
  parseHtml(
    html,
    (start) => ({
      onopentag(name, attributes) {
        const at = start();
        for (const slug of elementSlugs(name, attributes)) use(slug, at);
        if (attributes.style !== undefined) for (const slug of styleAttributeSlugs(attributes.style)) use(slug, at);
        if (name === 'style') style = { start: -1, chunks: [] };
      },
      ontext(text) {
        if (!style) return;
        if (style.start < 0) style.start = start();
        style.chunks.push(text);
      },
      onclosetag(name) {
        if (name !== 'style' || !style) return;
        const { start, chunks } = style;
        style = undefined;
        stylesheetSlugs(chunks.join(''), (slug, offset) => use(slug, start + offset));
      },
      oncomment() {
        use('html-comments', start());
      },
      onprocessinginstruction(name) {
        if (name.toLowerCase() === '!doctype') use('html-doctype', start());
      },
    }),
    // Entities left as written, so that a stylesheet's offsets are the template's.
    { decodeEntities: false, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  return used;
}
