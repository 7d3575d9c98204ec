import type { Context } from '../context.js';
import { ExitCode, FindingError, NotFoundError } from '../errors.js';
import { EVERY_DATE, MAX_LIMIT, parseItemsQuery } from '../model/query.js';
import type { ConversionRecord } from '../model/types.js';
import { orderCard as card } from '../output/cards.js';
import { safeData } from '../output/terminal.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { cardOptions, cardZone, ITEM_KIND, parseFlags, withBackend } from './shared.js';

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
async function printNotAConversion(ctx: Context, orderId: string, reasons: string[]): Promise<void> {
  if (ctx.format === 'json') await ctx.output.json({ conversions: [], paging: { start: 0, count: 0, totalCount: 0 }, reasons });
  else if (ctx.format === 'markdown') await ctx.output.text((await import('../output/markdown.js')).notAConversionMarkdown(orderId, reasons));
  else await ctx.output.page(ITEM_KIND, { rows: [], paging: { start: 0, count: 0, totalCount: 0 } });
}

/** An order the data holds that is not a conversion: a finding (exit 1), not "not found" (exit 3). */
function notAConversion(orderId: string, reasons: string[]): FindingError {
  return new FindingError(`order ${orderId} is not a conversion:\n  ${reasons.map((r) => `- ${r}`).join('\n  ')}`);
}

export default defineHandler<CommandFlags<'order'>>({
  async run(ctx, args, flags) {
    const orderId = args[0]!;
    const zone = cardZone(flags.tz, ctx.settings);
    const explicit = flags.from !== undefined || flags.to !== undefined;
    const print = async (rows: ConversionRecord[]) => {
      if (ctx.format === 'table') await ctx.output.text(orderCard(ctx, rows, zone));
      else if (ctx.format === 'markdown') await ctx.output.text((await import('../output/markdown.js')).orderMarkdown(rows, zone));
      else await ctx.output.page(ITEM_KIND, { rows, paging: { start: 0, count: rows.length, totalCount: rows.length } });
    };
    return withBackend(ctx, async (backend) => {
      if (!explicit) {
        // Every date: local mode over the dataset, API mode through GET conversions/orders/{orderId}.
        const found = await backend.findOrder(orderId);
        if (!found) {
          throw new NotFoundError(
            `order ${orderId} is not in the ${ctx.settings.mode === 'api' ? "API's data" : 'dataset'}`,
            'check the id; `convx items --order ID --from D --to D` lists the conversions of an order',
          );
        }
        if (found.conversions.length) {
          await print(found.conversions);
          return ExitCode.ok;
        }
        if (ctx.format !== 'table') await printNotAConversion(ctx, orderId, found.reasons);
        throw found.reasons.length ? notAConversion(orderId, found.reasons) : new FindingError(`order ${orderId} is not a conversion`);
      }
      const period = explicit ? { dateFrom: flags.from ?? EVERY_DATE.dateFrom, dateTo: flags.to ?? EVERY_DATE.dateTo } : EVERY_DATE;
      const query = parseFlags(() => parseItemsQuery({ ...period, orderId, sort: 'datetime', limit: String(MAX_LIMIT), ...(zone ? { timeZone: zone } : {}) }));
      const page = await backend.items(query);
      if (page.rows.length > 0) {
        await print(page.rows);
        return ExitCode.ok;
      }
      const diagnosis = await backend.diagnoseOrder?.(orderId, explicit ? period : undefined);
      if (diagnosis && !diagnosis.found) throw new NotFoundError(`order ${orderId} is not in the dataset`);
      // Only the API's look-up by id says whether the order exists at all (nothing on stdout when not).
      const found = diagnosis ? undefined : await backend.findOrder(orderId);
      if (!diagnosis && found === undefined) throw new NotFoundError(`order ${orderId} is not in the API's data`);
      if (ctx.format !== 'table') await ctx.output.page(ITEM_KIND, page);
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
    });
  },
});
