import type { Context } from '../context.js';
import { ExitCode, FindingError } from '../errors.js';
import { EVERY_DATE, MAX_LIMIT, parseItemsQuery } from '../model/query.js';
import type { Backend } from '../backend.js';
import type { ConversionRecord, Page } from '../model/types.js';
import { renderCard, tableCell } from '../output/format.js';
import { safeData } from '../output/terminal.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { answerEach, idsOf, lookedIn, notFound, printsCards, queried, type Outcome } from './ids.js';
import { ITEM_KIND, parseFlags, withBackend } from './shared.js';


function money(amount: number, currency: string): string {
  return `${tableCell(amount, 'conversionsAmount')} ${currency}`;
}

export function orderCard(ctx: Context, given: ConversionRecord[]): string {
  // Names, ids and links come from the data: made safe for a terminal first (output/terminal.ts).
  const records = safeData(given);
  const first = records[0]!;
  const { source, attribution } = first;
  const lines: [string, string][] = [
    ['source', `${source.name} (${source.type} ${source.id})`],
    ['campaign', source.campaignId],
  ];
  if (source.smartflowId) lines.push(['smartflow', `${source.smartflowName ?? source.smartflowId} (${source.smartflowId})`]);
  if (source.deliveryId) lines.push(['delivery', `${source.deliveryName ?? source.deliveryId} (${source.deliveryId})`]);
  const name = [first.firstName, first.surname].filter(Boolean).join(' ');
  lines.push(['contact', `${first.contactId}${first.clientContactId ? ` / ${first.clientContactId}` : ''}${name ? ` (${name})` : ''}`]);
  lines.push(['click', `${attribution.datetime}, ${attribution.hoursToConversion} h before the order (${attribution.model}, ${attribution.windowDays}-day window)`]);
  for (const record of records) {
    const label = record.isRefund ? 'refund' : 'order';
    const amount = money(record.conversionsAmount, record.conversionsCurrency);
    const reference =
      record.conversionsCurrency === record.referenceCurrency
        ? ''
        : ` = ${money(record.conversionsReferenceAmount, record.referenceCurrency)}`;
    const text = `${record.datetime}  ${amount}${reference}${record.country ? `  ${record.country}` : ''}`;
    lines.push([label, record.isRefund ? ctx.chalk.red(text) : text]);
  }
  lines.push(['detail', source.detailUrl]);
  lines.push(['activity', first.activityUrl]);
  return renderCard(`Order ${first.orderId}: a conversion of ${source.type} "${source.name}"`, lines, ctx.chalk);
}

/** An order the data holds that is not a conversion: a finding (exit 1), not "not found" (exit 3). */
function notAConversion(orderId: string, reasons: string[]): FindingError {
  return Object.assign(new FindingError(`order ${orderId} is not a conversion:\n  ${reasons.map((r) => `- ${r}`).join('\n  ')}`), { reasons });
}

const pageOf = (rows: ConversionRecord[]): Page<ConversionRecord> => ({ rows, paging: { start: 0, count: rows.length, totalCount: rows.length } });

/** One order's answer: emit gets what is printed of it (the conversions, or the empty page of a machine format); a finding or "not found" is thrown. */
async function answerOrder(ctx: Context, backend: Backend, orderId: string, flags: CommandFlags<'order'>, emit: (page: Page<ConversionRecord>) => Promise<void>): Promise<number> {
  const explicit = flags.from !== undefined || flags.to !== undefined;
  const print = (rows: ConversionRecord[]) => emit(pageOf(rows));
  if (!explicit) {
    // Every date: local mode over the dataset, API mode through GET conversions/orders/{orderId}.
    const found = await backend.findOrder(orderId);
    const hint = 'check the id; `convx items --order ID --from D --to D` lists the conversions of an order';
    if (!found) throw await notFound(backend, orderId, 'order', `order ${orderId} is not in ${lookedIn(ctx)}`, hint);
    if (found.conversions.length) {
      await print(found.conversions);
      return ExitCode.ok;
    }
    if (ctx.format !== 'table') await print([]);
    throw found.reasons.length ? notAConversion(orderId, found.reasons) : new FindingError(`order ${orderId} is not a conversion`);
  }
  const period = explicit ? { dateFrom: flags.from ?? EVERY_DATE.dateFrom, dateTo: flags.to ?? EVERY_DATE.dateTo } : EVERY_DATE;
  const query = parseFlags(() => parseItemsQuery({ ...period, orderId, sort: 'datetime', limit: String(MAX_LIMIT) }));
  const page = await backend.items(query);
  if (page.rows.length > 0) {
    await print(page.rows);
    return ExitCode.ok;
  }
  const diagnosis = await backend.diagnoseOrder?.(orderId, explicit ? period : undefined);
  if (diagnosis && !diagnosis.found) throw await notFound(backend, orderId, 'order', `order ${orderId} is not in the dataset`);
  // Only the API's look-up by id says whether the order exists at all (nothing on stdout when not).
  const found = diagnosis ? undefined : await backend.findOrder(orderId);
  if (!diagnosis && found === undefined) throw await notFound(backend, orderId, 'order', `order ${orderId} is not in the API's data`);
  if (ctx.format !== 'table') await emit(page);
  if (!diagnosis) {
    // API mode: the look-up by id tells an unknown order, one outside the period and one that is not a conversion apart.
    if (found?.reasons.length) throw notAConversion(orderId, found.reasons);
    if (found?.conversions.length) {
      throw new FindingError(
        `order ${orderId} is a conversion, but none of its transactions falls within ${query.dateFrom}..${query.dateTo} (the order is from ${found.conversions[0]!.datetime.slice(0, 10)})`,
      );
    }
    throw new FindingError(
      `order ${orderId} is not among the conversions of ${query.dateFrom}..${query.dateTo}`,
      'the API does not say why; it may be outside the period, cancelled, without revenue or without a click in the 30 days before it',
    );
  }
  if (diagnosis.reasons.length === 0) {
    throw new FindingError(`order ${orderId} has no conversion in ${query.dateFrom}..${query.dateTo}`);
  }
  throw notAConversion(orderId, diagnosis.reasons);
}

/** With several ids: an order's answer kept, a finding with it (answerEach prints them). */
async function orderOutcome(ctx: Context, backend: Backend, orderId: string, flags: CommandFlags<'order'>): Promise<Outcome> {
  const rows: ConversionRecord[] = [];
  const outcome = (finding?: FindingError): Outcome => ({
    result: { orderId, conversions: rows, reasons: (finding as { reasons?: string[] } | undefined)?.reasons ?? [] },
    rows,
    ...(rows.length && printsCards(ctx) ? { card: orderCard(ctx, rows) } : {}),
    ...(finding ? { finding } : {}),
  });
  try {
    await answerOrder(ctx, backend, orderId, flags, async (page) => void rows.push(...page.rows));
    return outcome();
  } catch (error) {
    if (error instanceof FindingError) return outcome(error);
    throw error;
  }
}

export default defineHandler<CommandFlags<'order'>>({
  async run(ctx, args, flags) {
    const { ids, several } = await idsOf(ctx, args, flags.stdin, 'an order id', 'orderId');
    if (several) ctx.output.check(queried(ITEM_KIND));
    return withBackend(ctx, async (backend) => {
      if (several) return answerEach(ctx, ids, ITEM_KIND, (id) => orderOutcome(ctx, backend, id, flags));
      return answerOrder(ctx, backend, ids[0]!, flags, async (page) => {
        if (ctx.format === 'table') await ctx.output.text(orderCard(ctx, page.rows));
        else await ctx.output.page(ITEM_KIND, page);
      });
    });
  },
});
