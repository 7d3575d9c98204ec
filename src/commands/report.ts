import type { Backend } from '../backend.js';
import type { Context } from '../context.js';
import { filterNames, parameters, TOP } from '../model/parameters.js';
import { bucketCount, formatQuery, parseReportQuery, parseTrendQuery, type RawParams, type ReportQuery } from '../model/query.js';
import type { AggregateRow, Page } from '../model/types.js';
import type { TableExtras } from '../output/writer.js';
import { packageVersion } from '../version.js';
import type { CommandFlags } from './options.js';
import { checkPageFlags, filterWords, printPage } from './page.js';
import { defineHandler } from './registry.js';
import {
  compareAwareKind,
  defaultedPeriod,
  explainEmpty,
  filtersOf,
  parseFlags,
  periodText,
  printDatasetWarnings,
  periodParams,
  printListing,
  REPORT_BREAKDOWN_KIND,
  REPORT_KIND,
  withBackend,
  type Progress,
  type ResultRequest,
  comparedPeriod,
} from './shared.js';

export default defineHandler<CommandFlags<'report'>>({
  async run(ctx, _args, flags) {
    const { raw, chosen: short } = periodParams('report', flags, ctx);
    const query = parseFlags(() => parseReportQuery(raw, ctx.io.now()));
    // the dates a short period or the defaults chose, named on stderr in any format (the JSON holds no period)
    const chosen = short ?? defaultedPeriod({ from: flags.from, to: flags.to }, query.timeZone);
    const plain = flags.breakdown ? REPORT_BREAKDOWN_KIND : REPORT_KIND;
    const kind = compareAwareKind(flags, query, plain, false);
    checkPageFlags(ctx, flags);
    if (ctx.format !== 'html') ctx.output.check(kind);
    const period = periodText(query, chosen);
    const request: ResultRequest = {
      command: 'report',
      period: query,
      given: { from: flags.from, to: flags.to },
      filters: filtersOf(query, filterNames('report')),
      ...(chosen === undefined ? {} : { chosen }),
    };
    await withBackend(
      ctx,
      (backend, progress) =>
        ctx.format === 'html'
          ? printReportPage(ctx, backend, progress, { query, request, flags })
          : printListing(ctx, backend, progress, {
              kind,
              noun: 'sources',
              request,
              offset: query.offset,
              period,
              ...(flags.all ? { all: () => backend.allReport(query) } : {}),
              page: () => backend.report(query),
              ...(flags.breakdown ? {} : { extras: (page: Page<AggregateRow>) => sparklines(ctx, backend, query, page.rows) }),
            }),
      { progress: true },
    );
  },
});

/** The sources that get a sparkline: the first by revenue (a per-source series has at most this many apart). */
const SPARKLINE_SOURCES = TOP.max;
/** The longest period whose days a sparkline shows (a year). */
const SPARKLINE_DAYS = 366;

/**
 * The Trend column of a table on a terminal: each source's revenue (conversionsAmountWTax) per day
 * of the period, from one per-source series of the same filters (the 20 sources with the most
 * revenue; the table leaves the cell of the others empty). None off a terminal, with --fields, for a
 * period longer than a year, or when no row is listed.
 */
async function sparklines(ctx: Context, backend: Backend, query: ReportQuery, rows: AggregateRow[]): Promise<TableExtras | undefined> {
  if (ctx.output.tableWidth() === undefined || ctx.globals.fields !== undefined || !rows.length) return undefined;
  if (bucketCount('day', query.dateFrom, query.dateTo) > SPARKLINE_DAYS) return undefined;
  const series = await backend.trend(
    parseTrendQuery(
      { ...seriesParams(query), interval: 'day', perSource: 'true', top: String(SPARKLINE_SOURCES) },
      ctx.io.now(),
    ),
  );
  const days = new Map<string, number[]>();
  for (const bucket of series.buckets) {
    if (!bucket.series || bucket.series === 'other') continue;
    const values = days.get(bucket.series) ?? [];
    values.push(bucket.conversionsAmountWTax);
    days.set(bucket.series, values);
  }
  return { sparklines: days };
}

/** The report's period, zone and filters as a series' parameters (the table's rows both take; no comparison). */
function seriesParams(query: ReportQuery): RawParams {
  const taken = new Set<string>(parameters('trend').map((p) => p.name));
  return Object.fromEntries(Object.entries(formatQuery('report', query)).filter(([name]) => taken.has(name) && name !== 'compareTo'));
}

/**
 * -o html: every row from --offset on (a page to share holds the whole report, as --all does; --limit
 * does not cut it), then the page to stdout or --output.
 */
async function printReportPage(
  ctx: Context,
  backend: Backend,
  progress: Progress,
  page: { query: ReportQuery; request: ResultRequest; flags: CommandFlags<'report'> },
): Promise<void> {
  const { query, request, flags } = page;
  progress.clear();
  printDatasetWarnings(ctx, backend);
  progress.phase(ctx.settings.mode === 'api' ? 'asking the API' : 'attributing conversions');
  const stream = await backend.allReport(query);
  const rows: AggregateRow[] = [];
  for await (const row of stream.rows) rows.push(row);
  progress.done();
  const { reportHtml } = await import('../output/html.js');
  const html = reportHtml(rows, {
    dateFrom: query.dateFrom,
    dateTo: query.dateTo,
    referenceCurrency: rows[0]?.referenceCurrency ?? ctx.globals.referenceCurrency,
    version: packageVersion(),
    dataVersion: stream.dataVersion,
    filters: filterWords(request.filters),
    timeZone: query.timeZone,
    compared: comparedPeriod(query),
  });
  await printPage(ctx, html, flags);
  if (stream.totalCount === 0) await explainEmpty(ctx, backend, 'sources', request);
  else if (request.chosen !== undefined) ctx.log.info(periodText(query, request.chosen));
}
