import { filterNames } from '../model/parameters.js';
import { timed } from '../timings.js';
import { monthDates, parseTrendQuery, type TrendQuery } from '../model/query.js';
import { otherPeriod } from '../model/compare.js';
import type { TrendBucket } from '../model/types.js';
import {
  BREAKDOWN_COLUMNS,
  isPeriodColumn,
  TREND_BREAKDOWN_TABLE_COLUMNS,
  TREND_COLUMNS,
  TREND_SERIES_BREAKDOWN_TABLE_COLUMNS,
  TREND_SERIES_COLUMNS,
  TREND_SERIES_TABLE_COLUMNS,
  TREND_TABLE_COLUMNS,
} from '../output/columns.js';
import { breakdownKind, type RecordKind } from '../output/writer.js';
import type { Context } from '../context.js';
import type { CommandFlags } from './options.js';
import { checkPageFlags, filterWords, printTrendPage } from './page.js';
import { defineHandler } from './registry.js';
import { compareAwareKind, comparedSummary, defaultedPeriod, explainEmpty, filtersOf, parseFlags, periodParams, printDatasetWarnings, skippedDaysText, withBackend, comparedPeriod } from './shared.js';

/** A series' rows: one per bucket (and series, per source); --breakdown: one per bucket and currency. */
function trendKind(perSource: boolean, breakdown: boolean): RecordKind {
  const kind: RecordKind = {
    columns: perSource ? TREND_SERIES_COLUMNS : TREND_COLUMNS,
    tableColumns: perSource ? TREND_SERIES_TABLE_COLUMNS : TREND_TABLE_COLUMNS,
    objectFields: ['breakdown'],
    totals: true,
  };
  if (!breakdown) return kind;
  return breakdownKind(kind, BREAKDOWN_COLUMNS, perSource ? TREND_SERIES_BREAKDOWN_TABLE_COLUMNS : TREND_BREAKDOWN_TABLE_COLUMNS, isPeriodColumn);
}

/** Nothing converted in any bucket: the series is all zeros. */
const isEmpty = (buckets: TrendBucket[]) => buckets.every((b) => b.grossConversionsNumber === 0);

/**
 * A note on the buckets of no time in a series that has time: the days its zone's clocks skipped
 * (Pacific/Apia's 2011-12-30), whose buckets are there with zeros, their start their end. A period
 * of only such days is an empty series, whose note says so (explainEmpty).
 */
function noteSkippedDays(ctx: Context, buckets: TrendBucket[], timeZone: string): void {
  const skipped = buckets.filter((b) => b.start === b.end);
  if (skipped.length === 0 || skipped.length === buckets.length) return;
  for (const day of new Set(skipped.map((b) => b.bucket))) {
    ctx.log.info(`${skippedDaysText(day, timeZone, new Date(skipped.find((b) => b.bucket === day)!.start))}: its bucket holds no time`);
  }
}

/**
 * With --compare by week or month, where a period cuts a week or month, its bucket counts only its
 * days in the period, as does the bucket beside it (Against), which the other period may cut
 * otherwise. By week: where the period cuts one (the other period, previous or a year before,
 * then cuts its weeks otherwise), with what compares whole weeks. By month with previous: where
 * either period cuts one (the other, of equal length, seldom starts on a first), with --compare
 * year, whose months are cut as the period's. Said once, and not beside an empty result's words.
 */
function noteCutBuckets(ctx: Context, query: TrendQuery, buckets: TrendBucket[]): void {
  if (query.compareTo === undefined || isEmpty(buckets)) return;
  const column = ctx.format === 'table' && ctx.globals.fields === undefined ? 'Against' : 'comparison.bucket';
  if (query.interval === 'week' && !wholeWeeks(query)) {
    ctx.log.info(
      `note: --compare sets each week beside the week in its place in ${otherText(query)} (${column}); a week the period cuts counts only its days in it, and the one beside it its days in the other period; a period from a Monday to a Sunday compares whole weeks`,
    );
  } else if (query.interval === 'month' && query.compareTo === 'previous') {
    const other = otherPeriod(query, 'previous');
    if (wholeMonths(query) && wholeMonths(other)) return;
    ctx.log.info(
      `note: --compare previous sets each month beside the month in its place in ${other.dateFrom}..${other.dateTo} (${column}), and a month that either period cuts counts only its days in it; --compare year sets each beside the same month a year before`,
    );
  }
}

const otherText = (query: TrendQuery) => {
  const other = otherPeriod(query, query.compareTo!);
  return `${other.dateFrom}..${other.dateTo}`;
};
const wholeWeeks = (p: { dateFrom: string; dateTo: string }) => weekday(p.dateFrom) === 1 && weekday(p.dateTo) === 0;
const wholeMonths = (p: { dateFrom: string; dateTo: string }) => p.dateFrom.endsWith('-01') && monthDates(p.dateTo.slice(0, 7)).dateTo === p.dateTo;

/** The day of the week of a date (0: Sunday, 1: Monday). */
const weekday = (date: string) => new Date(`${date}T00:00:00Z`).getUTCDay();

/**
 * On a terminal (a table fitted to its width), the chart of the buckets' revenue above the table:
 * one series, or one per source; nothing when the terminal is too small, with --no-chart or --fields.
 */
async function printChart(ctx: Context, buckets: TrendBucket[], wanted: boolean): Promise<void> {
  const width = ctx.output.tableWidth();
  if (!wanted || width === undefined || ctx.globals.fields !== undefined || !buckets.length) return;
  const { renderChart, trendChartInput, chartHeight } = await import('../output/chart.js');
  const text = renderChart(trendChartInput(buckets), { width, height: chartHeight((ctx.io.stdout as { rows?: number }).rows), color: ctx.chalk });
  if (text) await ctx.output.text(`${text}\n`);
}

export default defineHandler<CommandFlags<'trend'>>({
  async run(ctx, _args, flags) {
    const { raw, chosen: short } = periodParams('trend', flags, ctx);
    const query = parseFlags(() => parseTrendQuery(raw, ctx.io.now()));
    // the dates a short period or the defaults chose, named on stderr in any format (as report's)
    const chosen = short ?? defaultedPeriod({ from: flags.from, to: flags.to }, query.timeZone);
    const plain = trendKind(query.perSource === true, flags.breakdown === true);
    const kind = compareAwareKind(flags, query, plain, true);
    checkPageFlags(ctx, flags);
    if (ctx.format !== 'html') ctx.output.check(kind);
    await withBackend(ctx, async (backend) => {
      printDatasetWarnings(ctx, backend);
      const response = await timed('query', () => backend.trend(query));
      const request = { command: 'trend', period: query, given: { from: flags.from, to: flags.to }, filters: filtersOf(query, filterNames('trend')), interval: query.interval, ...(chosen === undefined ? {} : { chosen }) };
      // -o html: the series as a page (every bucket, a chart), to stdout or --output
      if (ctx.format === 'html') await printTrendPage(ctx, response, flags, { filters: filterWords(request.filters), compared: comparedPeriod(query) });
      else {
        await timed('write the output', async () => {
          await printChart(ctx, response.buckets, flags.chart !== false);
          await ctx.output.document(kind, response.buckets, (buckets) => ({ ...response, buckets }));
        });
      }
      noteSkippedDays(ctx, response.buckets, response.timeZone);
      noteCutBuckets(ctx, query, response.buckets);
      // the short period's dates where no empty result names them
      comparedSummary(ctx, query, chosen, isEmpty(response.buckets));
      if (isEmpty(response.buckets)) await explainEmpty(ctx, backend, 'conversions', request);
    });
  },
});
