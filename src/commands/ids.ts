/**
 * The look-ups' ids (`order`, `contact`, `drill`): what an id the command did not find names
 * instead, in words, with the command to run (Backend.resolve, the one resolver, local or
 * served); and several ids at once (the arguments, or --stdin one a line), one answer each.
 */
import type { Backend, IdMatch, IdResolution } from '../backend.js';
import { readAll, type Context } from '../context.js';
import { AmbiguousKeyError, ConvxError, ExitCode, NotFoundError, UsageError } from '../errors.js';
import { nearness } from '../model/closest.js';
import { urlSegment } from '../model/url.js';
import type { RecordKind } from '../output/writer.js';
import { quoted, shellWord } from '../words.js';

/** The commands that look an id up, and the kinds each one answers. */
export type LookupCommand = 'order' | 'contact' | 'drill';
const OWN: Record<LookupCommand, IdMatch['kind'][]> = { order: ['order'], contact: ['contact'], drill: ['source', 'smartflow', 'delivery'] };

/** A name after an id: quoted as a message quotes data (a line break in it as \n: the hint stays on its line). */
const named = (name: string | null) => (name ? ` ${quoted(name)}` : '');

/** A match as a suggestion names it: `o-2`, `c-1 (Martin Muller)`, `k-1 "Spring sale"`, `smartflow:sf-1 "Welcome series"`. */
export function suggestion(m: IdMatch): string {
  if (m.kind === 'contact') return `${m.id}${m.name ? ` (${m.name})` : ''}`;
  if (m.kind === 'smartflow') return `smartflow:${m.id}${named(m.name)}`;
  if (m.kind === 'delivery') return `${m.id}${named(m.name)} (smartflow ${m.smartflowId})`;
  return m.kind === 'source' ? `${m.id}${named(m.name)}` : m.id;
}

/** Whether a source match shares its id with a source of another type among the matches (campaign and automation x-1): its id alone names both. */
export function sharesId(m: IdMatch, matches: IdMatch[]): boolean {
  return m.kind === 'source' && matches.some((o) => o.kind === 'source' && o.id === m.id && o.type !== m.type);
}

/** The command that answers a match; `typed`: a source by its type and id (`automation:x-1`), for an id sources of two types carry. */
export function commandFor(m: IdMatch, typed = false): string {
  if (m.kind === 'order' || m.kind === 'contact') return `convx ${m.kind} ${shellWord(m.id)}`;
  if (m.kind === 'smartflow') return `convx drill ${shellWord(`smartflow:${m.id}`)}`;
  if (m.kind === 'delivery') return `convx drill /v1/deliveries/${urlSegment(m.smartflowId ?? '')}/${urlSegment(m.id)}/conversions`;
  if (m.by === 'campaignId') return `convx drill /v1/campaigns/${urlSegment(m.id)}/conversions`;
  return `convx drill ${shellWord(typed && m.type ? `${m.type}:${m.id}` : m.id)}`;
}

/** A match by the e-mail or client contact id of a contact's later row: where the key is, not a contact a look-up finds by it. */
const onLaterRow = (m: IdMatch): boolean => m.by === 'laterEmail' || m.by === 'laterClientContactId';

/** What a match is, after "ID is": `a contact (Felix Nowak)`, `the name of campaign k-1`, `a smartflow ("Welcome series")`. */
function what(m: IdMatch): string {
  const type = m.kind === 'source' ? (m.type ?? 'source') : m.kind;
  const article = /^[aeiou]/.test(type) ? 'an' : 'a';
  const named = m.kind === 'contact' ? (m.name ? ` (${m.name})` : '') : m.name ? ` ("${m.name}")` : '';
  const of = m.kind === 'delivery' ? ` of smartflow ${m.smartflowId}` : '';
  if (m.by === 'id') return `${article} ${type}${of}${named}`;
  if (onLaterRow(m)) {
    return `the ${m.by === 'laterEmail' ? 'e-mail' : 'client contact id'} on a later row of contact ${m.id}${named}, which look-ups do not read (a contact is its first row)`;
  }
  const fields: Partial<Record<IdMatch['by'], string>> = { email: 'the e-mail', clientContactId: 'the client contact id', name: 'the name', campaignId: 'the campaign id' };
  const field = fields[m.by];
  return `${field} of ${type} ${m.id}${m.by === 'name' ? '' : named}`;
}

/** One line per thing the id names, each with the command to run: `c-11 is a contact (Felix Nowak): convx contact c-11`. */
export function namesHint(resolution: IdResolution, matches: IdMatch[]): string {
  return matches.map((m) => `${resolution.id} is ${what(m)}: ${commandFor(m, sharesId(m, resolution.matches))}`).join('\n      ');
}

/** "did you mean ...?" with the nearest ids of the kinds, at most three, nearest first; undefined when none is near. */
export function nearestHint(resolution: IdResolution, kinds: IdMatch['kind'][]): string | undefined {
  // Each near match by what it was found by: its id, or its name (`drill 'spring sale'` is near k-1 "Spring sale", not near "k-1").
  // The resolver names an id once per kind, so the matches need no merging.
  const far = (term: string | null) => (term ? (nearness(resolution.id, term) ?? Infinity) : Infinity);
  const ranked = resolution.nearest
    .filter((m) => kinds.includes(m.kind))
    .map((m) => ({ m, d: Math.min(far(m.id), m.by === 'name' ? far(m.name) : Infinity) }))
    .filter(({ d }) => d !== Infinity)
    .sort((x, y) => x.d - y.d || x.m.id.localeCompare(y.m.id))
    .slice(0, 3)
    .map(({ m }) => m);
  return ranked.length ? `did you mean ${ranked.map(suggestion).join(', ')}?` : undefined;
}

/**
 * The hint of a look-up that found nothing: what else the id names (and the command to run),
 * else the nearest ids of the command's kinds; undefined when there is nothing to say or the
 * backend cannot tell.
 */
export async function notFoundHint(backend: Backend, id: string, command: LookupCommand): Promise<string | undefined> {
  const resolution = await backend.resolve?.(id);
  if (!resolution) return undefined;
  // A key of a contact's later row is no contact a look-up finds: said where it is, as a match of another kind is.
  const others = resolution.matches.filter((m) => !OWN[command].includes(m.kind) || onLaterRow(m));
  return others.length ? namesHint(resolution, others) : nearestHint(resolution, OWN[command]);
}

/**
 * Where a look-up looked, as its "not found" says: "the dataset", in API mode too (the API's own 404
 * says so), for the message is the `error` of several ids' answers on stdout, which both modes print alike.
 */
export const LOOKED_IN = 'the dataset';

/** A NotFoundError with the resolver's hint, else the one given. */
export async function notFound(backend: Backend, id: string, command: LookupCommand, message: string, hint?: string): Promise<NotFoundError> {
  return new NotFoundError(message, (await notFoundHint(backend, id, command)) ?? hint);
}

/** The ids to look up: the arguments, and with --stdin one a line (blank lines ignored), each trimmed; none at all is commander's own error (the argument was required before --stdin). */
export async function idsOf(ctx: Context, args: string[], stdin: boolean | undefined, noun: string, argument: string): Promise<{ ids: string[]; several: boolean }> {
  if (args.length === 0 && !stdin) throw new UsageError(`missing required argument '${argument}'`, [], `give ${noun} (or several), or pass --stdin to read them one a line`);
  const lines = stdin ? (await readAll(ctx.io.stdin)).split(/\r?\n/) : [];
  const ids = [...args, ...lines].map((a) => a.trim()).filter((a) => a !== '');
  if (ids.length === 0) throw new UsageError(`give ${noun}${stdin ? ': stdin had none' : ''}`);
  return { ids, several: stdin === true || ids.length > 1 };
}

/** The formats of several ids' answers made of records (the rest print each id's card, one after another). */
const RECORD_FORMATS: readonly string[] = ['json', 'jsonl', 'csv', 'tsv'];

/** Whether an answer is printed as a card (a table on a terminal), not as records. */
export const printsCards = (ctx: Context): boolean => !RECORD_FORMATS.includes(ctx.format);

/** One id's answer with several ids: the object of its json line, its csv rows, its card, or why not. */
export interface Answer {
  /** The id as given (trimmed). */
  id: string;
  /** The data holds it (an order that is not a conversion too). */
  found: boolean;
  /** What stderr says of it: null when it was answered. */
  error: string | null;
  /** What the look-up answered (the API's body: GET conversions/orders/{id}, GET contacts/{id}/conversions); null when not found. */
  result: unknown;
}

/** What a look-up of one id yields: the json result, the csv rows, the card; a finding (exit 1) with them. */
export interface Outcome {
  result: unknown;
  rows: Record<string, unknown>[];
  card?: string;
  finding?: ConvxError;
}

/**
 * Several ids, one answer each in the input's order: json, an array of answers; jsonl, one answer
 * a line; csv and tsv, the rows of every answer, each led by the id asked (`query`); a table, the
 * cards. Each id not found, of several contacts, or without an answer is named on stderr as one
 * alone would be, and last lines name those not found and those of several contacts. Exit 3 when any
 * was not found, else 2 when any names several contacts, else 1 when any is a finding.
 */
export async function answerEach(ctx: Context, ids: string[], kind: RecordKind, one: (id: string) => Promise<Outcome>): Promise<number> {
  const answers: Answer[] = [];
  const rows: Record<string, unknown>[] = [];
  const cards: string[] = [];
  const missing: string[] = [];
  const ambiguous: string[] = [];
  let code: number = ExitCode.ok;
  for (const id of ids) {
    let outcome: Outcome;
    try {
      outcome = await one(id);
    } catch (error) {
      // A key several contacts carry is that key's failed answer (found, but no one answer), as one not found is.
      if (!(error instanceof NotFoundError || error instanceof AmbiguousKeyError)) throw error;
      ctx.log.error(error);
      (error instanceof NotFoundError ? missing : ambiguous).push(id);
      answers.push({ id, found: error instanceof AmbiguousKeyError, error: error.message, result: null });
      continue;
    }
    if (outcome.finding) {
      ctx.log.error(outcome.finding);
      if (code === ExitCode.ok) code = outcome.finding.exitCode;
    }
    answers.push({ id, found: true, error: outcome.finding?.message ?? null, result: outcome.result });
    rows.push(...outcome.rows.map((row) => ({ query: id, ...row })));
    if (outcome.card) cards.push(outcome.card);
  }
  await printAnswers(ctx, kind, answers, rows, cards);
  if (missing.length) ctx.log.failure('convx: not found:', `${missing.length} of ${ids.length}: ${missing.join(', ')}`);
  if (ambiguous.length) ctx.log.failure('convx: of several contacts:', `${ambiguous.length} of ${ids.length}: ${ambiguous.join(', ')}`);
  return missing.length ? ExitCode.notFound : ambiguous.length ? ExitCode.usage : code;
}

async function printAnswers(ctx: Context, kind: RecordKind, answers: Answer[], rows: Record<string, unknown>[], cards: string[]): Promise<void> {
  if (ctx.format === 'json') await ctx.output.json(answers);
  else if (ctx.format === 'jsonl') for (const answer of answers) await ctx.output.json(answer);
  else if (!printsCards(ctx)) await ctx.output.page(queried(kind), { rows, paging: { start: 0, count: rows.length, totalCount: rows.length } });
  else if (cards.length) await ctx.output.text(cards.join('\n'));
}

/** csv and tsv of several ids: each row led by the id asked. */
export function queried(kind: RecordKind): RecordKind {
  return { ...kind, columns: ['query', ...kind.columns], tableColumns: ['query', ...kind.tableColumns] };
}
