import type { Backend, ContactReport } from '../backend.js';
import type { Context } from '../context.js';
import { ExitCode } from '../errors.js';
import { tableCell } from '../output/format.js';
import { safeData } from '../output/terminal.js';
import type { RecordKind } from '../output/writer.js';
import { answerEach, idsOf, lookedIn, notFound, printsCards, queried, type Outcome } from './ids.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { withBackend } from './shared.js';

/** csv, tsv and jsonl: one row per click, with the orders it decided or why it decided none. */
export const CLICK_KIND: RecordKind = {
  columns: ['datetime', 'sourceType', 'sourceId', 'sourceName', 'counted', 'orderIds', 'reason'],
  tableColumns: ['datetime', 'sourceType', 'sourceId', 'sourceName', 'counted', 'orderIds', 'reason'],
  objectFields: [],
};

const MATCHED_BY = { contactId: 'contact id', email: 'e-mail', clientContactId: 'client contact id' } as const;

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

/** The terminal view: who, the conversions with their sources, and every click with its outcome. */
export function contactCard(ctx: Context, given: ContactReport): string {
  const { chalk } = ctx;
  // Names, e-mail addresses, ids and reasons come from the data: made safe for a terminal first (output/terminal.ts).
  const report = safeData(given);
  const c = report.contact;
  const name = [c.firstName, c.surname].filter(Boolean).join(' ');
  const lines = [
    chalk.bold(`Contact ${c.contactId}${c.clientContactId ? ` / ${c.clientContactId}` : ''}${name ? ` (${name})` : ''}${c.email ? ` <${c.email}>` : ''}`),
    chalk.dim(`  found by ${MATCHED_BY[report.matchedBy]}`),
    '',
    chalk.bold(`Orders (${report.orders.length})`),
  ];
  if (report.orders.length === 0) lines.push(chalk.dim('  none'));
  for (const o of report.orders) {
    const source = report.conversions.find((r) => r.orderId === o.orderId)?.source;
    lines.push(
      o.conversion
        ? `  ${o.datetime}  ${o.orderId}  ${chalk.green(`a conversion of ${source ? `${source.type} "${source.name}" (${source.id})` : 'a source'}`)}`
        : `  ${o.datetime}  ${o.orderId}  ${chalk.dim(`not a conversion: ${o.reasons.join('; ') || 'no reason known'}`)}`,
    );
  }
  lines.push('', chalk.bold(`Conversions (${report.conversions.length})`));
  if (report.conversions.length === 0) lines.push(chalk.dim('  none'));
  for (const r of report.conversions) {
    const amount = `${tableCell(r.conversionsAmount, 'conversionsAmount')} ${r.conversionsCurrency}`;
    const what = `${r.isRefund ? 'refund' : 'order '} ${r.orderId}`;
    const text = `  ${r.datetime}  ${what}  ${amount}  ${r.source.type} "${r.source.name}" (${r.source.id}), click ${r.attribution.datetime}, ${r.attribution.hoursToConversion} h before`;
    lines.push(r.isRefund ? chalk.red(text) : text);
  }
  lines.push('', chalk.bold(`Clicks (${report.clicks.length})`));
  if (report.clicks.length === 0) lines.push(chalk.dim('  none'));
  for (const k of report.clicks) {
    const source = `${k.source.type} "${k.source.name}" (${k.source.id})`;
    lines.push(
      k.orderIds.length
        ? `  ${k.datetime}  ${source}  ${chalk.green(`decided ${k.orderIds.join(', ')}`)}`
        : `  ${k.datetime}  ${source}  ${chalk.dim(`did not count: ${k.reason}`)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** A contact's answer: the report, its click rows and its card; "not found" (with what the key names instead) is thrown. */
async function contactOutcome(ctx: Context, backend: Backend, key: string): Promise<Outcome> {
  const report = await backend.contact(key);
  const message = `no contact ${key} in ${lookedIn(ctx)} (looked for a contact id, an e-mail address and a client contact id)`;
  if (!report) throw await notFound(backend, key, 'contact', message);
  return { result: report, rows: clickRows(report), ...(printsCards(ctx) ? { card: contactCard(ctx, report) } : {}) };
}

export default defineHandler<CommandFlags<'contact'>>({
  async run(ctx, args, flags) {
    const { ids, several } = await idsOf(ctx, args, flags.stdin, 'a contact id, an e-mail address or a client contact id', 'contact');
    ctx.output.check(several ? queried(CLICK_KIND) : CLICK_KIND);
    return withBackend(ctx, async (backend) => {
      if (several) return answerEach(ctx, ids, CLICK_KIND, (key) => contactOutcome(ctx, backend, key));
      const { result: report, rows, card } = await contactOutcome(ctx, backend, ids[0]!);
      if (card !== undefined) await ctx.output.text(card);
      else if (ctx.format === 'json') await ctx.output.json(report);
      else await ctx.output.page(CLICK_KIND, { rows, paging: { start: 0, count: rows.length, totalCount: rows.length } });
      return ExitCode.ok;
    });
  },
});
