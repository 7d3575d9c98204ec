import { contactsCarrying, type Backend, type ContactReport } from '../backend.js';
import type { Context } from '../context.js';
import { AmbiguousKeyError, ExitCode } from '../errors.js';
import { contactCard as card } from '../output/cards.js';
import { safeData } from '../output/terminal.js';
import type { RecordKind } from '../output/writer.js';
import { answerEach, commandFor, idsOf, LOOKED_IN, notFound, printsCards, queried, suggestion, type Outcome } from './ids.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { cardOptions, cardZone, withBackend } from './shared.js';

/** csv, tsv and jsonl: one row per click, with the orders it decided or why it decided none. */
export const CLICK_KIND: RecordKind = {
  columns: ['datetime', 'sourceType', 'sourceId', 'sourceName', 'counted', 'orderIds', 'reason'],
  tableColumns: ['datetime', 'sourceType', 'sourceId', 'sourceName', 'counted', 'orderIds', 'reason'],
  objectFields: [],
};

/** The flat click rows of csv, tsv and jsonl. */
export function clickRows(report: ContactReport): Record<string, unknown>[] {
  return report.clicks.map((c) => ({
    datetime: c.datetime,
    sourceType: c.source.type,
    sourceId: c.source.id,
    sourceName: c.source.name,
    counted: c.orderIds.length > 0,
    orderIds: c.orderIds.join(' '),
    reason: c.reason ?? '',
  }));
}

/** The terminal view (output/cards.ts): who, the conversions with their sources, and every click with its outcome. */
export function contactCard(ctx: Context, given: ContactReport, zone?: string): string {
  // Names, e-mail addresses, ids and reasons come from the data: made safe for a terminal first (output/terminal.ts).
  return card(safeData(given), cardOptions(ctx, zone));
}

/** A contact's card: on a terminal (output/cards.ts), or -o markdown to paste. */
async function contactText(ctx: Context, report: ContactReport, zone: string | undefined): Promise<string> {
  return ctx.format === 'markdown' ? (await import('../output/markdown.js')).contactMarkdown(report, zone) : contactCard(ctx, report, zone);
}

const BY_WORDS: Record<ContactReport['matchedBy'], string> = { contactId: 'contact id', email: 'e-mail', clientContactId: 'client contact id' };

/**
 * A key found as the e-mail or client contact id of a contact that other contacts carry too (their
 * first rows, by the resolver: Backend.resolve, local or served): a usage error naming their ids, as a
 * name several sources carry is to drill (with several keys, that key's answer alone: answerEach).
 * An API without GET ids/{id} cannot tell: its answer stands.
 */
async function checkOneContact(backend: Backend, key: string, matchedBy: ContactReport['matchedBy']): Promise<void> {
  if (matchedBy === 'contactId') return;
  const { id, contacts: carriers } = await contactsCarrying(backend, key, matchedBy);
  if (carriers.length < 2) return;
  throw new AmbiguousKeyError(
    `"${id}" is the ${BY_WORDS[matchedBy]} of ${carriers.length} contacts: ${carriers.map(suggestion).join(', ')}`,
    matchedBy,
    `look one of them up by its contact id: ${commandFor(carriers[0]!)}`,
  );
}

/** A contact's answer: the report, its click rows and its card; "not found" (with what the key names instead) is thrown, and a key several contacts carry. */
async function contactOutcome(ctx: Context, backend: Backend, key: string, zone: string | undefined): Promise<Outcome> {
  const report = await backend.contact(key).catch(async (error: unknown) => {
    // A served key of several contacts (a 409): said as local mode says it, from the resolver's matches.
    if (error instanceof AmbiguousKeyError) await checkOneContact(backend, key, error.matchedBy);
    throw error;
  });
  const message = `no contact ${key} in ${LOOKED_IN} (looked for a contact id, an e-mail address and a client contact id)`;
  if (!report) throw await notFound(backend, key, 'contact', message);
  await checkOneContact(backend, key, report.matchedBy);
  return { result: report, rows: clickRows(report), ...(printsCards(ctx) ? { card: await contactText(ctx, report, zone) } : {}) };
}

export default defineHandler<CommandFlags<'contact'>>({
  async run(ctx, args, flags) {
    const { ids, several } = await idsOf(ctx, args, flags.stdin, 'a contact id, an e-mail address or a client contact id', 'contact');
    const zone = cardZone(flags.tz, ctx.settings);
    ctx.output.check(several ? queried(CLICK_KIND) : CLICK_KIND);
    return withBackend(ctx, async (backend) => {
      if (several) return answerEach(ctx, ids, CLICK_KIND, (key) => contactOutcome(ctx, backend, key, zone));
      const { result: report, rows, card } = await contactOutcome(ctx, backend, ids[0]!, zone);
      if (card !== undefined) await ctx.output.text(card);
      else if (ctx.format === 'json') await ctx.output.json(report);
      else await ctx.output.page(CLICK_KIND, { rows, paging: { start: 0, count: rows.length, totalCount: rows.length } });
      return ExitCode.ok;
    });
  },
});
