/**
 * Text for a terminal, pure: data values made harmless, and the columns a text takes.
 *
 * A value from the data (a contact's name, a source's name, a template's subject, an id)
 * may hold characters a terminal obeys instead of showing: ESC and the other C0 controls
 * (ESC[2J clears the screen; OSC 0 sets the window title; OSC 8 makes a link; OSC 52 writes
 * the clipboard), DEL, the C1 controls U+0080-U+009F (U+009B is CSI on its own: the same
 * sequences without ESC) and the bidi embeddings, overrides and isolates U+202A-U+202E and
 * U+2066-U+2069, which make text read in another order than it is (Trojan Source). Every
 * human-readable output passes values through `safeValue` (or a whole text through
 * `safeLines`) before colours are added:
 *
 * - tab, line feed, vertical tab, form feed, carriage return and U+2028/U+2029 (line and
 *   paragraph separators) become a space: a value stays on its line (the tables always did);
 * - every other one becomes U+FFFD "�", one column, visible: the value was not what it seems.
 *
 * The left-to-right and right-to-left marks (U+200E, U+200F, U+061C) are kept: they are part
 * of ordinary right-to-left text and cannot reorder more than the characters around them.
 * Machine formats keep the data exact (see `safeJsonText` for json on a terminal).
 */

/** The replacement of a control character in a value. */
export const REPLACEMENT = '\ufffd';

/** Every character safeValue replaces. */
const UNSAFE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'g');
/** The same, except the line feed and the tab a text's own layout may hold (messages, csv, tsv). */
const UNSAFE_IN_LINES = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const SPACE = /[\t\n\v\f\r\u2028\u2029]/;

const replace = (ch: string) => (SPACE.test(ch) ? ' ' : REPLACEMENT);

/** A data value for a terminal: one line, no control character, no bidi override (see the module's comment). */
export function safeValue(text: string): string {
  return UNSAFE.test(text) ? text.replace(UNSAFE_ALL, replace) : text;
}

/**
 * A text of several lines for a terminal (a message, a hint, csv or tsv shown on a
 * terminal): its line feeds and tabs stay, every other control is replaced as in safeValue.
 */
export function safeLines(text: string): string {
  return text.replace(UNSAFE_IN_LINES, replace);
}

/**
 * Every string of a value (a plain object, an array, nested) through safeValue; numbers,
 * booleans, null and other objects as they are. For the cards and summaries that pick many
 * fields of a record.
 */
export function safeData<T>(value: T): T {
  if (typeof value === 'string') return safeValue(value) as T;
  if (Array.isArray(value)) return value.map((v) => safeData(v)) as T;
  if (value !== null && typeof value === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(value))) {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) out[key] = safeData(v);
    return out as T;
  }
  return value;
}

/** What JSON.stringify leaves raw but a terminal would obey or reorder: DEL, C1, bidi overrides. */
const JSON_RAW = /[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * JSON text (json, jsonl) for a terminal, the same data: JSON.stringify escapes C0 controls
 * but writes DEL, C1 and bidi overrides as they are; here they become \\uXXXX escapes, which
 * any JSON parser reads back as the very same characters (outside strings JSON text is ASCII).
 */
export function safeJsonText(text: string): string {
  return text.replace(JSON_RAW, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * East Asian Wide and Fullwidth code points (Unicode's EastAsianWidth.txt, W and F; the CJK
 * ideograph blocks and planes 2-3 whole, assigned or not), as inclusive [first, last] pairs.
 */
// prettier-ignore
const WIDE_RANGES = [
  0x1100, 0x115f, 0x231a, 0x231b, 0x2329, 0x232a, 0x23e9, 0x23ec, 0x23f0, 0x23f0, 0x23f3, 0x23f3,
  0x25fd, 0x25fe, 0x2614, 0x2615, 0x2648, 0x2653, 0x267f, 0x267f, 0x2693, 0x2693, 0x26a1, 0x26a1,
  0x26aa, 0x26ab, 0x26bd, 0x26be, 0x26c4, 0x26c5, 0x26ce, 0x26ce, 0x26d4, 0x26d4, 0x26ea, 0x26ea,
  0x26f2, 0x26f3, 0x26f5, 0x26f5, 0x26fa, 0x26fa, 0x26fd, 0x26fd, 0x2705, 0x2705, 0x270a, 0x270b,
  0x2728, 0x2728, 0x274c, 0x274c, 0x274e, 0x274e, 0x2753, 0x2755, 0x2757, 0x2757, 0x2795, 0x2797,
  0x27b0, 0x27b0, 0x27bf, 0x27bf, 0x2b1b, 0x2b1c, 0x2b50, 0x2b50, 0x2b55, 0x2b55, 0x2e80, 0x303e,
  0x3041, 0x3247, 0x3250, 0x4dbf, 0x4e00, 0xa4c6, 0xa960, 0xa97c, 0xac00, 0xd7a3, 0xf900, 0xfaff,
  0xfe10, 0xfe19, 0xfe30, 0xfe6b, 0xff01, 0xff60, 0xffe0, 0xffe6, 0x16fe0, 0x1b2fb, 0x1f004, 0x1f004,
  0x1f0cf, 0x1f0cf, 0x1f18e, 0x1f18e, 0x1f191, 0x1f19a, 0x1f200, 0x1f320, 0x1f32d, 0x1f335, 0x1f337, 0x1f37c,
  0x1f37e, 0x1f393, 0x1f3a0, 0x1f3ca, 0x1f3cf, 0x1f3d3, 0x1f3e0, 0x1f3f0, 0x1f3f4, 0x1f3f4, 0x1f3f8, 0x1f43e,
  0x1f440, 0x1f440, 0x1f442, 0x1f4fc, 0x1f4ff, 0x1f53d, 0x1f54b, 0x1f54e, 0x1f550, 0x1f567, 0x1f57a, 0x1f57a,
  0x1f595, 0x1f596, 0x1f5a4, 0x1f5a4, 0x1f5fb, 0x1f64f, 0x1f680, 0x1f6c5, 0x1f6cc, 0x1f6cc, 0x1f6d0, 0x1f6d2,
  0x1f6d5, 0x1f6df, 0x1f6eb, 0x1f6ec, 0x1f6f4, 0x1f6fc, 0x1f7e0, 0x1f7f0, 0x1f90c, 0x1f93a, 0x1f93c, 0x1f945,
  0x1f947, 0x1f9ff, 0x1fa70, 0x1faf6, 0x20000, 0x3fffd,
];

function isWideCodePoint(cp: number): boolean {
  if (cp < 0x1100) return false;
  let lo = 0;
  let hi = WIDE_RANGES.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < WIDE_RANGES[mid * 2]!) hi = mid - 1;
    else if (cp > WIDE_RANGES[mid * 2 + 1]!) lo = mid + 1;
    else return true;
  }
  return false;
}

/** A cluster that takes no column: combining marks, zero-width spaces and joiners, bidi marks, Hangul's medial and final jamo. */
const ZERO = /^(?:\p{M}|[\u200b-\u200f\u2060-\u2064\ufeff\u061c\u1160-\u11ff])+$/u;
const EMOJI = /^\p{Emoji_Presentation}/u;

let segmenter: Intl.Segmenter | undefined;

/** The user-perceived characters (grapheme clusters) of a text. */
export function graphemes(text: string): string[] {
  segmenter ??= new Intl.Segmenter('en', { granularity: 'grapheme' });
  return Array.from(segmenter.segment(text), (s) => s.segment);
}

/** Columns one grapheme cluster takes: 0, 1 or 2 (wide and fullwidth East Asian characters, emoji). */
export function graphemeWidth(g: string): number {
  const cp = g.codePointAt(0)!;
  if (cp >= 0x20 && cp < 0x7f && g.length === 1) return 1;
  if (ZERO.test(g)) return 0;
  if (isWideCodePoint(cp) || EMOJI.test(g) || g.includes('\ufe0f')) return 2;
  return 1;
}

/**
 * Columns a text takes on a terminal: wide and fullwidth East Asian characters and emoji
 * take two, combining marks and zero-width characters none (a wcwidth of grapheme clusters).
 * For text without control characters (pass values through safeValue first).
 */
export function textWidth(text: string): number {
  if (/^[\x20-\x7e]*$/.test(text)) return text.length;
  let width = 0;
  for (const g of graphemes(text)) width += graphemeWidth(g);
  return width;
}

/** The text cut to `width` columns, ending in an ellipsis when something was cut; a wide character is never cut in half. */
export function fit(text: string, width: number): string {
  if (textWidth(text) <= width) return text;
  if (width <= 0) return '';
  let out = '';
  let used = 0;
  for (const g of graphemes(text)) {
    const w = graphemeWidth(g);
    if (used + w > width - 1) break;
    out += g;
    used += w;
  }
  return `${out.trimEnd()}…`;
}

/** The text padded with spaces to `width` columns (padEnd counts UTF-16 units, not columns). */
export function padColumns(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - textWidth(text)));
}

/** A run of text and what it carries (a card's colour: output/cards.ts), kept with each piece of it that wrapRuns lays out. */
export interface TextRun {
  text: string;
}

/**
 * Runs laid out in lines of at most `width` columns, broken at spaces (the spaces at a break
 * dropped), each line after the first starting with `indent` spaces; a word longer than a line
 * stays whole on its own, and so does a word within the first `indent` columns (a card's label)
 * and the first after them (the first word of its value). Runs that fit, or without a width (or
 * one too narrow to hold the indent): one line, as they are.
 */
export function wrapRuns<R extends TextRun>(runs: R[], width: number | undefined, indent: number): (R | TextRun)[][] {
  if (width === undefined || width <= indent + 1 || textWidth(runs.map((r) => r.text).join('')) <= width) return [runs];
  const lines: (R | TextRun)[][] = [[]];
  let used = 0;
  let pending: R[] = [];
  let pendingWidth = 0;
  for (const run of runs) {
    for (const piece of run.text.split(/( +)/)) {
      if (piece === '') continue;
      const token: R = { ...run, text: piece };
      if (piece.startsWith(' ')) {
        pending.push(token);
        pendingWidth += piece.length;
        continue;
      }
      const w = textWidth(piece);
      if (used > indent && used + pendingWidth + w > width) {
        // the indent is plain, without the run's colour
        lines.push([{ text: ' '.repeat(indent) }]);
        used = indent;
      } else {
        lines.at(-1)!.push(...pending);
        used += pendingWidth;
      }
      pending = [];
      pendingWidth = 0;
      lines.at(-1)!.push(token);
      used += w;
    }
  }
  return lines;
}

/**
 * A text of lines for a terminal wrapped at spaces to the width (wrapRuns), a wrapped line continued
 * under its own indent (its leading spaces); as it is without a width (not a terminal).
 */
export function wrapLines(text: string, width: number | undefined): string {
  if (width === undefined) return text;
  return text
    .split('\n')
    .map((line) => wrapRuns([{ text: line }], width, /^ */.exec(line)![0].length).map((pieces) => pieces.map((p) => p.text).join('')).join('\n'))
    .join('\n');
}
