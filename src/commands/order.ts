import type { Backend } from '../backend.js';
import type { Context } from '../context.js';
import { ExitCode, FindingError } from '../errors.js';
import { EVERY_DATE, MAX_LIMIT, parseItemsQuery, type RequestParams } from '../model/query.js';
import type { ConversionRecord, Page } from '../model/types.js';
import { orderCard as card } from '../output/cards.js';
import { safeData } from '../output/terminal.js';
import { answerEach, idsOf, LOOKED_IN, notFound, printsCards, queried, type Outcome } from './ids.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { cardOptions, cardZone, chosenPeriod, ITEM_KIND, parseFlags, withBackend } from './shared.js';

/** The card of an order's conversions on a terminal (output/cards.ts), in the zone asked beside UTC. */
export function orderCard(ctx: Context, given: ConversionRecord[], zone?: string): string {
  // Names, ids and links come from the data: made safe for a terminal first (output/terminal.ts).
  return card(safeData(given), cardOptions(ctx, zone));
}

/**
 * An order the data holds that is not a conversion, on stdout before the finding: -o json the
 * document with its reasons (the API's look-up has them, so both modes print the same), -o markdown
 * the reasons to paste, the other formats what they print of no records.
 */
async function printNotAConversion(ctx: Context, orderId: string, reasons: string[], paging: Page<ConversionRecord>['paging'] = { start: 0, count: 0, totalCount: 0 }): Promise<void> {
  if (ctx.format === 'json') await ctx.output.json({ conversions: [], paging, reasons });
  else if (ctx.format === 'markdown') await ctx.output.text((await import('../output/markdown.js')).notAConversionMarkdown(orderId, reasons));
  else await ctx.output.page(ITEM_KIND, { rows: [], paging });
}

/** Why an order the API's look-up found has no conversion in a period, in the words local mode's diagnosis uses (diagnose.ts). */
function periodReasons(found: { reasons: string[]; conversions: ConversionRecord[] }, query: { dateFrom: string; dateTo: string }): string[] {
  if (found.reasons.length) return found.reasons;
  const first = found.conversions[0];
  if (!first) return [];
  return [`the order is a conversion, but none of its transactions falls within ${query.dateFrom}..${query.dateTo} (the order is from ${first.datetime.slice(0, 10)})`];
}

/**
 * An order the data holds that is not a conversion (of the period, when one is given): a finding
 * (exit 1), not "not found" (exit 3); its reasons kept for several ids' answers.
 */
function notAConversion(orderId: string, reasons: string[], period?: { dateFrom: string; dateTo: string }): FindingError {
  const what = period ? `is not among the conversions of ${period.dateFrom}..${period.dateTo}` : 'is not a conversion';
  return Object.assign(new FindingError(`order ${orderId} ${what}:\n  ${reasons.map((r) => `- ${r}`).join('\n  ')}`), { reasons });
}

/** An order's conversions as a person reads them: the card on a terminal, or -o markdown to paste. */
async function orderText(ctx: Context, rows: ConversionRecord[], zone: string | undefined): Promise<string> {
  return ctx.format === 'markdown' ? (await import('../output/markdown.js')).orderMarkdown(rows, zone) : orderCard(ctx, rows, zone);
}

/** What answerOrder prints of an order: its conversions, or (not on a terminal) why it is not one, or a period's empty page. */
interface OrderPrinter {
  rows(rows: ConversionRecord[]): Promise<void>;
  notAConversion(reasons: string[]): Promise<void>;
  empty(page: Page<ConversionRecord>, reasons: string[]): Promise<void>;
}

/** What the flags ask of every id: the cards' zone, and the period's raw parameters (undefined: every date). */
interface OrderAsk {
  zone: string | undefined;
  period: RequestParams | undefined;
}

/**
 * The ask of the flags, their usage errors raised before any data is opened: a short period and
 * --from/--to together, a date that is not one.
 */
function orderAsk(ctx: Context, flags: CommandFlags<'order'>): OrderAsk {
  const zone = cardZone(flags.tz, ctx.settings);
  const short = chosenPeriod(flags, ctx.io.now(), zone);
  if (short === undefined && flags.from === undefined && flags.to === undefined) return { zone, period: undefined };
  const dates = short ? { dateFrom: short.dateFrom, dateTo: short.dateTo } : { dateFrom: flags.from ?? EVERY_DATE.dateFrom, dateTo: flags.to ?? EVERY_DATE.dateTo };
  const period = { ...dates, sort: 'datetime', limit: String(MAX_LIMIT), ...(zone ? { timeZone: zone } : {}) };
  parseFlags(() => parseItemsQuery(period));
  return { zone, period };
}

/** One order: what printer gets of it; a finding or "not found" (with what the id names instead) is thrown. */
async function answerOrder(ctx: Context, backend: Backend, orderId: string, { period }: OrderAsk, print: OrderPrinter): Promise<number> {
  if (!period) {
    // Every date: local mode over the dataset, API mode through GET conversions/orders/{orderId}.
    const found = await backend.findOrder(orderId);
    const hint = 'check the id; `convx items --order ID --from D --to D` lists the conversions of an order';
    if (!found) throw await notFound(backend, orderId, 'order', `order ${orderId} is not in ${LOOKED_IN}`, hint);
    if (found.conversions.length) {
      await print.rows(found.conversions);
      return ExitCode.ok;
    }
    if (ctx.format !== 'table') await print.notAConversion(found.reasons);
    throw found.reasons.length ? notAConversion(orderId, found.reasons) : new FindingError(`order ${orderId} is not a conversion`);
  }
  const query = parseFlags(() => parseItemsQuery({ ...period, orderId }));
  const page = await backend.items(query);
  if (page.rows.length > 0) {
    await print.rows(page.rows);
    return ExitCode.ok;
  }
  const diagnosis = await backend.diagnoseOrder?.(orderId, { dateFrom: query.dateFrom, dateTo: query.dateTo });
  // Without local mode's diagnosis, only the API's look-up by id says whether the order exists at all (nothing on stdout when not).
  const found = diagnosis ? undefined : await backend.findOrder(orderId);
  if (diagnosis ? !diagnosis.found : found === undefined) throw await notFound(backend, orderId, 'order', `order ${orderId} is not in ${LOOKED_IN}`);
  // Why it has no conversion in the period: local mode's diagnosis, or the API's look-up by id in the same words.
  const reasons = diagnosis ? diagnosis.reasons : periodReasons(found!, query);
  if (ctx.format !== 'table') await print.empty(page, reasons);
  if (reasons.length) throw notAConversion(orderId, reasons, query);
  if (diagnosis) throw new FindingError(`order ${orderId} has no conversion in ${query.dateFrom}..${query.dateTo}`);
  throw new FindingError(
    `order ${orderId} is not among the conversions of ${query.dateFrom}..${query.dateTo}`,
    'the API does not say why; it may be outside the period, cancelled, without revenue or without a click in the 30 days before it',
  );
}

/** With several ids: an order's answer kept, a finding with it (answerEach prints them). */
async function orderOutcome(ctx: Context, backend: Backend, orderId: string, ask: OrderAsk): Promise<Outcome> {
  const { zone } = ask;
  const rows: ConversionRecord[] = [];
  // The card of a person's format: the conversions', or -o markdown's reasons to paste.
  const cardOf = async (reasons: string[]): Promise<string | undefined> => {
    if (!printsCards(ctx)) return undefined;
    if (rows.length) return orderText(ctx, rows, zone);
    return ctx.format === 'markdown' && reasons.length ? (await import('../output/markdown.js')).notAConversionMarkdown(orderId, reasons) : undefined;
  };
  const outcome = async (finding?: FindingError): Promise<Outcome> => {
    const reasons = (finding as { reasons?: string[] } | undefined)?.reasons ?? [];
    const card = await cardOf(reasons);
    return { result: { orderId, conversions: rows, reasons }, rows, ...(card !== undefined ? { card } : {}), ...(finding ? { finding } : {}) };
  };
  const keep = async (given: ConversionRecord[]) => void rows.push(...given);
  try {
    // an empty page adds no rows
    await answerOrder(ctx, backend, orderId, ask, { rows: keep, notAConversion: async () => undefined, empty: async () => undefined });
    return await outcome();
  } catch (error) {
    if (error instanceof FindingError) return outcome(error);
    throw error;
  }
}

export default defineHandler<CommandFlags<'order'>>({
  async run(ctx, args, flags) {
    const { ids, several } = await idsOf(ctx, args, flags.stdin, 'an order id', 'orderId');
    const ask = orderAsk(ctx, flags);
    const { zone } = ask;
    if (several) ctx.output.check(queried(ITEM_KIND));
    return withBackend(ctx, async (backend) => {
      if (several) return answerEach(ctx, ids, ITEM_KIND, (id) => orderOutcome(ctx, backend, id, ask));
      const orderId = ids[0]!;
      return answerOrder(ctx, backend, orderId, ask, {
        rows: async (rows) => {
          if (ctx.format === 'table' || ctx.format === 'markdown') await ctx.output.text(await orderText(ctx, rows, zone));
          else await ctx.output.page(ITEM_KIND, { rows, paging: { start: 0, count: rows.length, totalCount: rows.length } });
        },
        notAConversion: (reasons) => printNotAConversion(ctx, orderId, reasons),
        empty: (page, reasons) => (reasons.length ? printNotAConversion(ctx, orderId, reasons, page.paging) : ctx.output.page(ITEM_KIND, page)),
      });
    });
  },
});
