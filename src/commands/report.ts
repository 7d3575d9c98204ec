import { parseReportQuery } from '../model/query.js';
import { defineHandler } from './registry.js';
import {
  filtersOf,
  type PagingFlags,
  pagingParams,
  parseFlags,
  printListing,
  REPORT_BREAKDOWN_KIND,
  REPORT_KIND,
  withBackend,
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
      (backend, progress) =>
        printListing(ctx, backend, progress, {
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
