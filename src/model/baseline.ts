/**
 * A validation compared with an earlier one (`convx validate --baseline FILE`, docs/validation.md
 * "Baseline"): the baseline is the JSON that `-o json` printed then. Pure: the text of the file and
 * the response in, the changes out, each saying whether it fails the run under the flags given.
 * The same in local and API mode (the baseline is a local file; the response comes from either).
 */
import { UsageError } from '../errors.js';
import { COMPONENT_SCHEMAS } from './shapes.js';
import type { Finding, ValidateResponse } from './validation.js';

/** What a change from the baseline may be before it fails the run. */
export interface BaselinePolicy {
  /** The largest relative change of the deliverable audience that passes (0.1: 10 %); undefined: any. */
  maxAudienceDrift?: number | undefined;
  /** Every change fails: any drift, a finding gone, a changed sample (new findings fail always; information never). */
  strict?: boolean | undefined;
}

export type BaselineChangeKind = 'audience' | 'new_finding' | 'gone_finding' | 'sample';

export interface BaselineChange {
  kind: BaselineChangeKind;
  /** One line saying what changed. */
  message: string;
  /** Whether this change fails the run under the policy. */
  fails: boolean;
  /** A new or gone finding, with its severity. */
  finding?: Finding & { severity: Severity };
  /** A changed sample's language and contact. */
  language?: string;
  contactId?: string;
  /** A changed sample: a short diff of each part that changed, "- before" and "+ after" lines. */
  diff?: string[];
  /** A sample's change: one that came, went, or changed. */
  sample?: 'new' | 'gone' | 'changed';
}

export interface BaselineComparison {
  /** The baseline file as the command line named it. */
  file: string;
  same: boolean;
  changes: BaselineChange[];
}

type Sample = ValidateResponse['render']['samples'][number];
/** An information finding (render.information) is compared too, and listed, but never fails the run. */
type Severity = 'error' | 'warning' | 'information';

/** A JSON Schema as shapes.ts writes them (the keywords the check below reads). */
interface Schema {
  type?: string | readonly string[];
  enum?: readonly unknown[];
  required?: readonly string[];
  properties?: Record<string, unknown>;
  items?: unknown;
  $ref?: string;
  minimum?: number;
}

const RESPONSE_SCHEMA = COMPONENT_SCHEMAS.ValidateResponse;

/**
 * What a baseline must hold, as the response's JSON Schema says it (COMPONENT_SCHEMAS of shapes.ts):
 * the parts the comparison reads, the audience's counts and the whole of render (samples, findings).
 */
const BASELINE_SCHEMA: Schema = {
  type: 'object',
  required: ['audience', 'render'],
  properties: {
    audience: {
      type: 'object',
      required: ['intended', 'suppressed', 'deliverable'],
      // counts: none below 0 (the drift divides by the deliverable audience)
      properties: Object.fromEntries((['intended', 'suppressed', 'deliverable'] as const).map((k) => [k, { ...RESPONSE_SCHEMA.properties.audience.properties[k], minimum: 0 }])),
    },
    render: RESPONSE_SCHEMA.properties.render,
  },
};

const TYPE_WORDS: Record<string, string> = { string: 'a string', integer: 'a whole number', number: 'a number', boolean: 'true or false', object: 'an object', array: 'an array', null: 'null' };

const resolve = (schema: Schema): Schema =>
  schema.$ref ? (COMPONENT_SCHEMAS as Record<string, unknown>)[schema.$ref.replace('#/components/schemas/', '')] as Schema : schema;

function isType(value: unknown, type: string): boolean {
  if (type === 'integer') return Number.isInteger(value);
  if (type === 'array') return Array.isArray(value);
  if (type === 'object') return typeof value === 'object' && value !== null && !Array.isArray(value);
  if (type === 'null') return value === null;
  return typeof value === type;
}

/** The first value at odds with the schema, as "render.samples[2].textExcerpt must be a string"; undefined when none is. */
function schemaProblem(value: unknown, given: Schema, path: string): string | undefined {
  const schema = resolve(given);
  const types = schema.type === undefined ? [] : typeof schema.type === 'string' ? [schema.type] : schema.type;
  if (types.length && !types.some((t) => isType(value, t))) return `${path} must be ${types.map((t) => TYPE_WORDS[t] ?? t).join(' or ')}`;
  if (schema.minimum !== undefined && typeof value === 'number' && value < schema.minimum) return `${path} must be ${TYPE_WORDS[String(schema.type)] ?? 'a number'} from ${schema.minimum}`;
  if (schema.enum && !schema.enum.includes(value)) return `${path} must be ${schema.enum.map((v) => JSON.stringify(v)).join(' or ')}`;
  if (Array.isArray(value) && schema.items) {
    for (const [i, item] of value.entries()) {
      const problem = schemaProblem(item, schema.items as Schema, `${path}[${i}]`);
      if (problem) return problem;
    }
  }
  if (isType(value, 'object') && schema.properties) {
    const object = value as Record<string, unknown>;
    for (const [key, property] of Object.entries(schema.properties)) {
      const at = path ? `${path}.${key}` : key;
      // a property that is missing: what it must be, as for one of the wrong type
      if (object[key] === undefined && !schema.required?.includes(key)) continue;
      const problem = schemaProblem(object[key], property as Schema, at);
      if (problem) return problem;
    }
  }
  return undefined;
}

/** The first problem of a parsed baseline's shape ("render.errors[2].code must be a string"), or undefined. */
function shapeProblem(body: unknown): string | undefined {
  if (!isType(body, 'object')) return 'must hold a JSON object (the output of convx validate -o json)';
  return schemaProblem(body, BASELINE_SCHEMA, '');
}

/** Where in a text JSON's grammar first fails (line and column from 1), or undefined where it does not. */
export type JsonErrorAt = (text: string) => { line: number; column: number } | undefined;

const BASELINE_HINT = 'a baseline is what convx validate -o json printed (or --update-baseline wrote)';

/**
 * The baseline of a file's text (a UTF-8 BOM in front, as some editors save, is read past): a usage
 * error (exit 2) naming the file and what is wrong when it is not JSON (where, by `errorAt`: the line
 * and column, never the text there, which JSON.parse's message quotes) or not a validation's result.
 */
export function parseBaseline(text: string, file: string, errorAt: JsonErrorAt = () => undefined): ValidateResponse {
  const json = text.replace(/^\uFEFF/, '');
  let body: unknown;
  try {
    body = JSON.parse(json);
  } catch {
    const at = errorAt(json);
    throw new UsageError(`--baseline ${file} is not JSON${at ? ` (at line ${at.line}, column ${at.column})` : ''}`, [], BASELINE_HINT);
  }
  const problem = shapeProblem(body);
  if (problem) throw new UsageError(`--baseline ${file} is not a validation result: ${problem}`, [], BASELINE_HINT);
  return body as ValidateResponse;
}

/** "10%", "10" or "2.5 %": the fraction it names (0.1); undefined when it is not a percentage from 0. */
export function parseDrift(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*%?\s*$/.exec(text);
  return match ? Number(match[1]) / 100 : undefined;
}

const percent = (fraction: number) => (Number.isFinite(fraction) ? `${fraction >= 0 ? '+' : ''}${(fraction * 100).toFixed(1)} %` : 'from none');

/** The deliverable audience's change, when there is one. */
function audienceChange(before: ValidateResponse, after: ValidateResponse, policy: BaselinePolicy): BaselineChange[] {
  const [was, is] = [before.audience.deliverable, after.audience.deliverable];
  if (was === is) return [];
  const drift = was === 0 ? Infinity : (is - was) / was;
  const over = policy.maxAudienceDrift !== undefined && Math.abs(drift) > policy.maxAudienceDrift;
  const limit = policy.maxAudienceDrift !== undefined ? `, ${over ? 'over' : 'within'} --max-audience-drift ${+(policy.maxAudienceDrift * 100).toFixed(4)}%` : '';
  return [{ kind: 'audience', message: `deliverable audience ${was} -> ${is} (${percent(drift)}${limit})`, fails: over || !!policy.strict }];
}

/**
 * The numbers of a finding's message that are counts, lines, lengths or percentages ("3 recipients",
 * "html line 12", "200 characters", "(14 in all)", "50 %"): a number standing alone, as a word of its
 * own, not one a value is made of (an id or a URL: c-9001, l-99, banner2.png, utm_campaign=2024) nor
 * one that follows a word naming a value (contact 9001, list 42, asset 7, language, country).
 */
const COUNTED = /(?<![^\s(])(?<!\b(?:contact|list|asset|language|country) )\d+(?:[.,]\d+)*(?=$|[\s%),;:]|\.(?:\s|$))/g;

/**
 * User text a message quotes, whose digits are its own (a subject "SALE 50 % OFF", a campaign
 * utm_campaign=summer 2024): "…" (a subject, a link's text, a header's value, JSON.stringify's
 * escapes inside; it opens after no letter or digit and closes before a space, a punctuation mark or
 * the end, so a quote inside the text does not end it), «…», “…”, and a value after `=` (a tracking
 * parameter's, decoded: it may hold spaces) up to `&`, ", ", " (" or the end.
 */
export const QUOTED = /((?<![\p{L}\p{N}])"(?:\\.|[^"\\]|"(?![\s),;:.!?\]]|$))*"(?=[\s),;:.!?\]]|$)|«[^»]*»|“[^”]*”|=(?:[^&,\s]|,(?!\s)|\s(?!\())*)/u;

/** What may follow a closing quote (QUOTED), and what \. does not take (a line terminator). */
const CLOSES = /[\s),;:.!?\]]/u;
const LINE_END = /[\n\r\u2028\u2029]/;
const SPACE = /\s/u;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
const NONE = -1;

/**
 * `text.split(QUOTED)`, in time linear in the length: the parts between quoted text and the quoted
 * text itself, alternately. The pattern takes time that grows with the square of the length where a
 * quote never closes (100,000 "«": 13.8 s), reading from each to the end. Here where each kind of
 * quote would close is worked out once, from the end backwards: the pattern reads a "…" one way
 * only (its three kinds of step start with different characters), and stops at the first quote
 * that a space, a punctuation mark or the end follows, a backslash before a line end, or the end.
 */
export function splitQuoted(text: string): string[] {
  const n = text.length;
  // closing[i]: where a "…" whose inside starts at i closes (its closing quote), or NONE
  const closing = new Int32Array(n + 1).fill(NONE);
  const nextGuillemet = new Int32Array(n + 1).fill(NONE);
  const nextCurly = new Int32Array(n + 1).fill(NONE);
  for (let i = n - 1; i >= 0; i--) {
    const c = text[i]!;
    nextGuillemet[i] = c === '»' ? i : nextGuillemet[i + 1]!;
    nextCurly[i] = c === '”' ? i : nextCurly[i + 1]!;
    if (c === '"') closing[i] = i + 1 === n || CLOSES.test(text[i + 1]!) ? i : closing[i + 1]!;
    else if (c === '\\') {
      // \. takes the backslash and the code point after it, but a line end
      const next = text.codePointAt(i + 1);
      closing[i] = next === undefined || LINE_END.test(String.fromCodePoint(next)) ? NONE : closing[i + 1 + (next > 0xffff ? 2 : 1)]!;
    } else closing[i] = closing[i + 1]!;
  }
  const before = (at: number) => {
    const code = at >= 2 && /[\udc00-\udfff]/.test(text[at - 1]!) && /[\ud800-\udbff]/.test(text[at - 2]!) ? text.slice(at - 2, at) : text[at - 1];
    return code !== undefined && LETTER_OR_DIGIT.test(code);
  };
  /** The end of the quoted text that starts at `at`, or NONE. */
  const quotedEnd = (at: number): number => {
    const c = text[at];
    if (c === '"') return before(at) || closing[at + 1] === NONE ? NONE : closing[at + 1]! + 1;
    if (c === '«') return nextGuillemet[at + 1] === NONE ? NONE : nextGuillemet[at + 1]! + 1;
    if (c === '“') return nextCurly[at + 1] === NONE ? NONE : nextCurly[at + 1]! + 1;
    if (c !== '=') return NONE;
    // a value after =: up to &, a comma and a space, a space and "(", or the end
    let end = at + 1;
    for (; end < n; end++) {
      const d = text[end]!;
      if (d === '&' || (d === ',' && end + 1 < n && SPACE.test(text[end + 1]!)) || (SPACE.test(d) && text[end + 1] === '(')) break;
    }
    return end;
  };
  const parts: string[] = [];
  let copied = 0;
  for (let at = 0; at < n; at++) {
    const end = quotedEnd(at);
    if (end === NONE) continue;
    parts.push(text.slice(copied, at), text.slice(at, end));
    copied = end;
    at = end - 1;
  }
  parts.push(text.slice(copied));
  return parts;
}

/**
 * The words after a count (masked) up to the next punctuation mark agree with it ("1 link has", "2
 * links have"; "1 recipient in language de gets", "2 recipients … get"): each without its number, a
 * final s dropped and are, have, were as is, has, was.
 */
const AGREEING = /\0[^,;:()"«“=.!?]*/g;
const SINGULAR: Record<string, string> = { are: 'is', have: 'has', were: 'was' };
const numberless = (word: string) => (SINGULAR[word] ?? word).replace(/s$/, '');

/** Counts a message writes only from 2 (clients.ts: ", 2 uses"; tracking.ts: " and 1 other sample" from 1): left out with them. */
const OPTIONAL_COUNTS = /, \0 use\b| and \0 other sample\b/g;

/**
 * A message without its counts, lines and percentages (each masked as NUL, a character no word of
 * convx's holds), nor the number of the words that agree with
 * them: what stays the same when only numbers move. Quoted user text is kept as it is.
 */
function countless(message: string): string {
  const parts = splitQuoted(message);
  // odd parts are quoted; an unquoted part after one is read with the quote before it, as the message has it
  return JSON.stringify(parts.map((part, i) => (i % 2 ? part : (i ? `"${part}` : part).replace(COUNTED, '\0').replace(AGREEING, (words) => words.replace(/\p{L}+/gu, numberless)).replace(OPTIONAL_COUNTS, ''))));
}

/** An inline asset's place in the request (`inline:2`): not part of a finding's identity (assets reordered, one inserted in front). */
const INLINE = /\binline:\d+\b/g;
const unplaced = (text: string | undefined) => text?.replace(INLINE, 'inline:#');

/**
 * What identifies a finding across runs: its severity, code and place (an inline asset by its
 * content's findings, not its index), and its message with its counts and lines left out, and the
 * singular or plural of the words that agree with them (they move; under --strict-baseline they
 * count too: any change at all). Ids, URLs and quoted user text in it stay. Not its file: a path
 * differs between checkouts.
 */
function findingKey(f: Finding, severity: Severity, strict: boolean): string {
  const message = unplaced(f.message)!;
  return JSON.stringify([severity, f.code, unplaced(f.assetRef), f.language, f.field, f.contactId, strict ? message : countless(message)]);
}

const withSeverity = (r: ValidateResponse): (Finding & { severity: Severity })[] => [
  ...r.render.errors.map((f) => ({ ...f, severity: 'error' as const })),
  ...r.render.warnings.map((f) => ({ ...f, severity: 'warning' as const })),
  ...(r.render.information ?? []).map((f) => ({ ...f, severity: 'information' as const })),
];

/** The findings of `of` beyond those of `than` (as many times as they are more). */
function extraFindings(of: ValidateResponse, than: ValidateResponse, strict: boolean): (Finding & { severity: Severity })[] {
  const key = (f: Finding & { severity: Severity }) => findingKey(f, f.severity, strict);
  const counts = new Map<string, number>();
  for (const f of withSeverity(than)) counts.set(key(f), (counts.get(key(f)) ?? 0) + 1);
  return withSeverity(of).filter((f) => {
    const left = counts.get(key(f)) ?? 0;
    counts.set(key(f), left - 1);
    return left <= 0;
  });
}

/** Characters of context around a change in a short diff, and the most of the changed text shown. */
const CONTEXT = 20;
const CHANGED = 80;

/** "- …before…" and "+ …after…": the part that differs, with a little context each side. */
export function shortDiff(before: string, after: string): string[] {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let end = 0;
  while (end < before.length - start && end < after.length - start && before[before.length - 1 - end] === after[after.length - 1 - end]) end++;
  const side = (text: string) => {
    const from = Math.max(0, start - CONTEXT);
    const changed = text.slice(start, text.length - end);
    const shown = changed.length > CHANGED ? `${changed.slice(0, CHANGED)}…` : changed;
    const tail = text.slice(text.length - end, text.length - end + CONTEXT);
    return `${from > 0 ? '…' : ''}${text.slice(from, start)}${shown}${tail}${text.length - end + CONTEXT < text.length ? '…' : ''}`;
  };
  return [`- ${side(before)}`, `+ ${side(after)}`];
}

const sampleKey = (s: Sample) => JSON.stringify([s.language, s.contactId]);

/** Samples (by language and contact) whose subject, HTML or text changed, and samples that came or went. */
function sampleChanges(before: ValidateResponse, after: ValidateResponse, policy: BaselinePolicy): BaselineChange[] {
  const was = new Map(before.render.samples.map((s) => [sampleKey(s), s]));
  const now = new Set(after.render.samples.map(sampleKey));
  const change = (s: Sample, sample: 'new' | 'gone' | 'changed', message: string, diff?: string[]): BaselineChange => ({
    kind: 'sample',
    message,
    fails: !!policy.strict,
    language: s.language,
    contactId: s.contactId,
    ...(diff ? { diff } : {}),
    sample,
  });
  const changes: BaselineChange[] = [];
  for (const s of after.render.samples) {
    const old = was.get(sampleKey(s));
    const who = `sample ${s.language} (contact ${s.contactId})`;
    if (!old) {
      changes.push(change(s, 'new', `${who} is new`));
      continue;
    }
    // a part both results have (a baseline written before textExcerpt and digest existed compares what it has)
    const parts = (['subject', 'htmlExcerpt', 'textExcerpt'] as const).filter((p) => old[p] !== undefined && s[p] !== undefined && old[p] !== s[p]);
    if (parts.length) {
      const names = parts.map((p) => ({ subject: 'subject', htmlExcerpt: 'HTML', textExcerpt: 'text' })[p]);
      changes.push(change(s, 'changed', `${who}: ${names.join(' and ')} changed`, parts.flatMap((p) => shortDiff(old[p]!, s[p]!))));
    } else if (old.digest !== undefined && s.digest !== undefined && old.digest !== s.digest) {
      changes.push(change(s, 'changed', `${who}: the HTML or text changed past the excerpts (the whole rendered sample differs)`));
    }
  }
  for (const s of before.render.samples) if (!now.has(sampleKey(s))) changes.push(change(s, 'gone', `sample ${s.language} (contact ${s.contactId}) is gone`));
  return changes;
}

const findingText = (f: Finding & { severity: Severity }) => `${f.severity} ${f.code}: ${f.message}`;

/** Whether a finding's coming or going may fail the run: an error's or a warning's. */
const counts = (f: { severity: Severity }) => f.severity !== 'information';

/**
 * Every change from the baseline, in order: the audience, new findings (always failing), findings
 * gone, changed samples; the last two, and any drift, fail only under `strict`. An information
 * finding that came or went is listed and never fails (information never fails a run).
 */
export function compareWithBaseline(before: ValidateResponse, after: ValidateResponse, file: string, policy: BaselinePolicy = {}): BaselineComparison {
  const changes: BaselineChange[] = [
    ...audienceChange(before, after, policy),
    ...extraFindings(after, before, !!policy.strict).map((finding) => ({ kind: 'new_finding' as const, message: `new ${findingText(finding)}`, fails: counts(finding), finding })),
    ...extraFindings(before, after, !!policy.strict).map((finding) => ({ kind: 'gone_finding' as const, message: `gone ${findingText(finding)}`, fails: !!policy.strict && counts(finding), finding })),
    ...sampleChanges(before, after, policy),
  ];
  return { file, same: changes.length === 0, changes };
}

/** Why the comparison fails the run ("1 new finding and 1 audience drift since the baseline"), or undefined. */
export function baselineReason(comparison: BaselineComparison | undefined): string | undefined {
  const failing = comparison?.changes.filter((c) => c.fails) ?? [];
  if (!failing.length) return undefined;
  const words: Record<BaselineChangeKind, [string, string]> = {
    audience: ['audience drift', 'audience drifts'],
    new_finding: ['new finding', 'new findings'],
    gone_finding: ['finding gone', 'findings gone'],
    sample: ['changed sample', 'changed samples'],
  };
  const counted = (Object.keys(words) as BaselineChangeKind[])
    .map((kind) => [kind, failing.filter((c) => c.kind === kind).length] as const)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => `${n} ${words[kind][n === 1 ? 0 : 1]}`);
  return `${counted.join(', ')} since the baseline ${comparison!.file}`;
}

/** The response as a baseline file holds it: without the samples' whole HTML (only -o html asks for it). */
export function baselineOf(response: ValidateResponse): ValidateResponse {
  return {
    ...response,
    render: { ...response.render, samples: response.render.samples.map(({ html: _html, ...sample }) => sample) },
  };
}
