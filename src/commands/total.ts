import { filterNames } from '../model/parameters.js';
import { timed } from '../timings.js';
import { parseTotalQuery } from '../model/query.js';
import { BREAKDOWN_COLUMNS, isPeriodColumn, TOTAL_BREAKDOWN_TABLE_COLUMNS, TOTAL_COLUMNS, TOTAL_TABLE_COLUMNS } from '../output/columns.js';
import { breakdownKind, type RecordKind } from '../output/writer.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { compareAwareKind, comparedSummary, defaultedPeriod, explainEmpty, filtersOf, parseFlags, periodParams, printDatasetWarnings, withBackend } from './shared.js';

/** The total as one row: its period and zone, then its figures; --breakdown: one row per currency. */
const TOTAL_KIND: RecordKind = { columns: TOTAL_COLUMNS, tableColumns: TOTAL_TABLE_COLUMNS, objectFields: ['breakdown'], totals: false };
const TOTAL_BREAKDOWN_KIND = { ...breakdownKind(TOTAL_KIND, BREAKDOWN_COLUMNS, TOTAL_BREAKDOWN_TABLE_COLUMNS, isPeriodColumn), totals: false };

export default defineHandler<CommandFlags<'total'>>({
  async run(ctx, _args, flags) {
    const { raw, chosen: short } = periodParams('total', flags, ctx);
    const query = parseFlags(() => parseTotalQuery(raw, ctx.io.now()));
    // the dates a short period or the defaults chose, named on stderr in any format (as report's)
    const chosen = short ?? defaultedPeriod({ from: flags.from, to: flags.to }, query.timeZone);
    const plain = flags.breakdown ? TOTAL_BREAKDOWN_KIND : TOTAL_KIND;
    const kind = compareAwareKind(flags, query, plain, false);
    ctx.output.check(kind);
    await withBackend(ctx, async (backend) => {
      printDatasetWarnings(ctx, backend);
      const response = await timed('query', () => backend.total(query));
      const { total, comparison, ...period } = response;
      const compared = comparison === undefined ? {} : { comparison };
      // json: the answer as the interface has it; the other formats: one row of the period and its figures (and comparison)
      await ctx.output.document(kind, [{ ...period, ...total, ...compared }], ([row]) => {
        const { dateFrom: _f, dateTo: _t, timeZone: _z, comparison: shown, ...figures } = row as typeof period & typeof total & typeof compared;
        return { ...period, total: figures, ...(shown === undefined ? {} : { comparison: shown }) };
      });
      // the short period's dates where no empty result names them
      comparedSummary(ctx, query, chosen, total.grossConversionsNumber === 0);
      if (total.grossConversionsNumber === 0) {
        const request = { command: 'total', period: query, given: { from: flags.from, to: flags.to }, filters: filtersOf(query, filterNames('total')), ...(chosen === undefined ? {} : { chosen }) };
        await explainEmpty(ctx, backend, 'conversions', request);
      }
    });
  },
});
