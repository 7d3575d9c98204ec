import { parseReportQuery } from '../model/query.js';
import { defineHandler } from './registry.js';
import {
  REPORT_BREAKDOWN_KIND,
  REPORT_KIND,
  explainEmpty,
  filtersOf,
  pageSummary,
  pagingParams,
  parseFlags,
  printDatasetWarnings,
  withBackend,
  writeAll,
  type PagingFlags,
} from './shared.js';

interface ReportFlags extends PagingFlags {
  from?: string;
  to?: string;
  query?: string;
  breakdown?: boolean;
}

/** The report's filters, in the order an empty result names them. */
const REPORT_FILTERS = ['country', 'currency', 'q'] as const;

export default defineHandler<ReportFlags>({
  async run(ctx, _args, flags) {
    const query = parseFlags(() =>
      parseReportQuery({ dateFrom: flags.from, dateTo: flags.to, q: flags.query, ...pagingParams(flags) }, ctx.io.now()),
    );
    const kind = flags.breakdown ? REPORT_BREAKDOWN_KIND : REPORT_KIND;
    ctx.output.check(kind);
    const period = `${query.dateFrom}..${query.dateTo}`;
    const request = {
      command: 'report',
      period: query,
      given: { from: flags.from, to: flags.to },
      filters: filtersOf(query, REPORT_FILTERS),
    };
    await withBackend(
      ctx,
      async (backend, progress) => {
        progress.clear();
        printDatasetWarnings(ctx, backend);
        progress.phase(ctx.settings.mode === 'api' ? 'asking the API' : 'attributing conversions');
        if (flags.all) {
          const stream = await backend.allReport(query);
          const count = await writeAll(ctx, kind, stream, query.offset, progress);
          if (stream.totalCount === 0) await explainEmpty(ctx, backend, 'sources', request);
          else pageSummary(ctx, { start: query.offset, count, totalCount: stream.totalCount }, 'sources', period, true);
        } else {
          const page = await backend.report(query);
          progress.done();
          await ctx.output.page(kind, page);
          if (page.paging.totalCount === 0) await explainEmpty(ctx, backend, 'sources', request);
          else pageSummary(ctx, page.paging, 'sources', period, false);
        }
      },
      { progress: true },
    );
  },
});
