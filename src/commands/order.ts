import type { Context } from '../context.js';
import { NotFoundError } from '../errors.js';
import { addDays, formatDate, MAX_LIMIT, parseItemsQuery } from '../model/query.js';
import type { ConversionRecord } from '../model/types.js';
import { renderCard, tableCell } from '../output/format.js';
import { API_ORDER_DAYS } from './options.js';
import { defineHandler } from './registry.js';
import { ITEM_KIND, parseFlags, withBackend } from './shared.js';

interface OrderFlags {
  from?: string;
  to?: string;
}

/** Local mode can search the whole dataset; these bounds stand for "any date". */
export const ALL_TIME = { dateFrom: '1900-01-01', dateTo: '9999-12-31' };
function money(amount: number, currency: string): string {
  return `${tableCell(amount, 'conversionsAmount')} ${currency}`;
}

export function orderCard(ctx: Context, records: ConversionRecord[]): string {
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

export default defineHandler<OrderFlags>({
  async run(ctx, args, flags) {
    const orderId = args[0]!;
    let period =
      flags.from === undefined && flags.to === undefined
        ? ALL_TIME
        : { dateFrom: flags.from ?? ALL_TIME.dateFrom, dateTo: flags.to ?? ALL_TIME.dateTo };
    if (period === ALL_TIME && ctx.settings.mode === 'api') {
      // A service is asked for a bounded period; a year back covers most support questions.
      const dateTo = formatDate(ctx.io.now());
      period = { dateFrom: addDays(dateTo, -(API_ORDER_DAYS - 1)), dateTo };
      ctx.log.info(`searching ${period.dateFrom}..${period.dateTo} (the last ${API_ORDER_DAYS} days; --from and --to search others)`);
    }
    const query = parseFlags(() =>
      parseItemsQuery({ ...period, orderId, sort: 'datetime', limit: String(MAX_LIMIT) }),
    );
    const explicitPeriod = flags.from === undefined && flags.to === undefined ? undefined : period;
    return withBackend(ctx, async (backend) => {
      const page = await backend.items(query);
      if (page.rows.length > 0) {
        if (ctx.format === 'table') await ctx.output.text(orderCard(ctx, page.rows));
        else await ctx.output.page(ITEM_KIND, page);
        return 0;
      }
      const diagnosis = await backend.diagnoseOrder?.(orderId, explicitPeriod);
      if (ctx.format !== 'table') await ctx.output.page(ITEM_KIND, page);
      if (!diagnosis) {
        throw new NotFoundError(
          `order ${orderId} is not among the conversions of ${query.dateFrom}..${query.dateTo}`,
          'the API does not say why; it may be outside the period, cancelled, without revenue or without a click in the 30 days before it',
        );
      }
      if (!diagnosis.found) throw new NotFoundError(`order ${orderId} is not in the dataset`);
      if (diagnosis.reasons.length === 0) {
        throw new NotFoundError(`order ${orderId} has no conversion in ${query.dateFrom}..${query.dateTo}`);
      }
      throw new NotFoundError(
        `order ${orderId} is not a conversion:\n  ${diagnosis.reasons.map((r) => `- ${r}`).join('\n  ')}`,
      );
    });
  },
});
