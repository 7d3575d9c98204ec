import { filterNames } from '../model/parameters.js';
import { parseReportQuery } from '../model/query.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { filtersOf, parseFlags, periodText, printListing, queryParams, REPORT_BREAKDOWN_KIND, REPORT_KIND, withBackend } from './shared.js';

export default defineHandler<CommandFlags<'report'>>({
  async run(ctx, _args, flags) {
    const query = parseFlags(() => parseReportQuery(queryParams('report', flags, ctx.settings), ctx.io.now()));
    const kind = flags.breakdown ? REPORT_BREAKDOWN_KIND : REPORT_KIND;
    ctx.output.check(kind);
    const period = periodText(query);
    const request = {
      command: 'report',
      period: query,
      given: { from: flags.from, to: flags.to },
      filters: filtersOf(query, filterNames('report')),
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
