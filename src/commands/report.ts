import { parseReportQuery } from '../model/query.js';
import { defineCommand } from './registry.js';
import {
  FILTER_OPTIONS,
  PAGING_OPTIONS,
  PERIOD_OPTIONS,
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

export default defineCommand<ReportFlags>({
  name: 'report',
  summary: 'conversions per attributing source (GET /conversions)',
  options: [
    ...PERIOD_OPTIONS,
    ...FILTER_OPTIONS,
    { flags: '-q, --query <text>', description: 'only sources whose name or smartflow name contains the text' },
    ...PAGING_OPTIONS,
    { flags: '--breakdown', description: 'one row per source and order currency (table, csv, tsv)' },
  ],
  examples: [
    'convx report --data samples/shop --from 2024-03-01 --to 2024-03-31',
    'convx report --country CZ,SK --currency EUR -q spring',
    'convx report --sort -refundsAmountWTax,name --limit 10',
    'convx report --all -o csv > sources.csv',
    'convx report --breakdown -o tsv',
  ],
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
