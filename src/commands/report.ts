import type { Backend } from '../backend.js';
import type { Context } from '../context.js';
import { filterNames } from '../model/parameters.js';
import { parseReportQuery, type ReportQuery } from '../model/query.js';
import type { AggregateRow } from '../model/types.js';
import { packageVersion } from '../version.js';
import type { CommandFlags } from './options.js';
import { checkPageFlags, filterWords, printPage } from './page.js';
import { defineHandler } from './registry.js';
import {
  explainEmpty,
  filtersOf,
  parseFlags,
  printDatasetWarnings,
  printListing,
  queryParams,
  REPORT_BREAKDOWN_KIND,
  REPORT_KIND,
  withBackend,
  type Progress,
  type ResultRequest,
} from './shared.js';

export default defineHandler<CommandFlags<'report'>>({
  async run(ctx, _args, flags) {
    const query = parseFlags(() => parseReportQuery(queryParams('report', flags), ctx.io.now()));
    const kind = flags.breakdown ? REPORT_BREAKDOWN_KIND : REPORT_KIND;
    checkPageFlags(ctx, flags);
    if (ctx.format !== 'html') ctx.output.check(kind);
    const period = `${query.dateFrom}..${query.dateTo}`;
    const request = {
      command: 'report',
      period: query,
      given: { from: flags.from, to: flags.to },
      filters: filtersOf(query, filterNames('report')),
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
            }),
      { progress: true },
    );
  },
});

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
  });
  await printPage(ctx, html, flags);
  if (stream.totalCount === 0) await explainEmpty(ctx, backend, 'sources', request);
}
