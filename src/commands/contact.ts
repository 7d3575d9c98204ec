import type { ContactReport } from '../backend.js';
import type { Context } from '../context.js';
import { ExitCode, NotFoundError, UsageError } from '../errors.js';
import { contactCard as card } from '../output/cards.js';
import { safeData } from '../output/terminal.js';
import type { RecordKind } from '../output/writer.js';
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

export default defineHandler<CommandFlags<'contact'>>({
  async run(ctx, args, flags) {
    const key = (args[0] ?? '').trim();
    if (key === '') throw new UsageError('give a contact id, an e-mail address or a client contact id');
    const zone = cardZone(flags.tz, ctx.settings);
    ctx.output.check(CLICK_KIND);
    return withBackend(ctx, async (backend) => {
      const report = await backend.contact(key);
      if (!report) {
        throw new NotFoundError(
          `no contact ${key} in the ${ctx.settings.mode === 'api' ? "API's data" : 'dataset'} (looked for a contact id, an e-mail address and a client contact id)`,
        );
      }
      if (ctx.format === 'table') await ctx.output.text(contactCard(ctx, report, zone));
      else if (ctx.format === 'markdown') await ctx.output.text((await import('../output/markdown.js')).contactMarkdown(report, zone));
      else if (ctx.format === 'json') await ctx.output.json(report);
      else {
        const rows = clickRows(report);
        await ctx.output.page(CLICK_KIND, { rows, paging: { start: 0, count: rows.length, totalCount: rows.length } });
      }
      return ExitCode.ok;
    });
  },
});
