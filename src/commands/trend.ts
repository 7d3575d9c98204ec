import { filterNames } from '../model/parameters.js';
import { parseTrendQuery } from '../model/query.js';
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
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { comparedKind, comparedSummary, explainEmpty, filtersOf, parseFlags, printDatasetWarnings, queryParams, withBackend } from './shared.js';

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

export default defineHandler<CommandFlags<'trend'>>({
  async run(ctx, _args, flags) {
    const query = parseFlags(() => parseTrendQuery(queryParams('trend', flags), ctx.io.now()));
    const plain = trendKind(query.perSource === true, flags.breakdown === true);
    const kind = query.compareTo === undefined ? plain : comparedKind(plain, true);
    ctx.output.check(kind);
    await withBackend(ctx, async (backend) => {
      printDatasetWarnings(ctx, backend);
      const response = await backend.trend(query);
      await ctx.output.document(kind, response.buckets, (buckets) => ({ ...response, buckets }));
      comparedSummary(ctx, query);
      if (isEmpty(response.buckets)) {
        const request = { command: 'trend', period: query, given: { from: flags.from, to: flags.to }, filters: filtersOf(query, filterNames('trend')) };
        await explainEmpty(ctx, backend, 'conversions', request);
      }
    });
  },
});
