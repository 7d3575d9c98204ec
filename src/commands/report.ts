import { parseReportQuery } from '../model/query.js';
import { defineHandler } from './registry.js';
import {
  REPORT_BREAKDOWN_KIND,
  REPORT_KIND,
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

export default defineHandler<ReportFlags>({
  async run(ctx, _args, flags) {
    const query = parseFlags(() =>
      parseReportQuery({ dateFrom: flags.from, dateTo: flags.to, q: flags.query, ...pagingParams(flags) }, ctx.io.now()),
    );
    const kind = flags.breakdown ? REPORT_BREAKDOWN_KIND : REPORT_KIND;
    ctx.output.check(kind);
    const period = `${query.dateFrom}..${query.dateTo}`;
    await withBackend(ctx, async (backend) => {
      printDatasetWarnings(ctx, backend);
      if (flags.all) {
        const stream = await backend.allReport(query);
        const count = await writeAll(ctx, kind, stream, query.offset);
        pageSummary(ctx, { start: query.offset, count, totalCount: stream.totalCount }, 'sources', period, true);
      } else {
        const page = await backend.report(query);
        await ctx.output.page(kind, page);
        pageSummary(ctx, page.paging, 'sources', period, false);
      }
    });
  },
});
