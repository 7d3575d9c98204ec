import type { Context } from '../context.js';
import { parseItemsQuery, type RawParams } from '../model/query.js';
import { defineHandler } from './registry.js';
import {
  ITEM_KIND,
  explainEmpty,
  filtersOf,
  pageSummary,
  pagingParams,
  parseFlags,
  printDatasetWarnings,
  withBackend,
  writeAll,
  type PagingFlags,
  type ResultRequest,
} from './shared.js';

export interface ItemsFlags extends PagingFlags {
  from?: string;
  to?: string;
  source?: string;
  sourceType?: string;
  smartflow?: string;
  delivery?: string;
  contact?: string;
  order?: string;
}

/** The items filters, in the order an empty result names them. */
const ITEM_FILTERS = ['sourceType', 'sourceId', 'campaignId', 'smartflowId', 'deliveryId', 'contactId', 'orderId', 'country', 'currency'] as const;

/**
 * How a listing was asked for, so that an empty result can say so: the command with its
 * positional arguments (default "items"), and --from/--to as typed (default: raw's dates).
 */
export interface ItemsInvocation {
  command?: string;
  given?: ResultRequest['given'];
  /** The parameters the command takes as flags, to name as filters (default: every items filter). */
  filters?: readonly string[];
}

/** Lists conversion records for an items query (shared by items and drill). */
export async function listItems(ctx: Context, raw: RawParams, all: boolean, invocation: ItemsInvocation = {}): Promise<void> {
  const query = parseFlags(() => parseItemsQuery(raw, { allowCampaignId: true }));
  ctx.output.check(ITEM_KIND);
  const period = `${query.dateFrom}..${query.dateTo}`;
  const request: ResultRequest = {
    command: invocation.command ?? 'items',
    period: query,
    given: invocation.given ?? { from: raw.dateFrom, to: raw.dateTo },
    filters: filtersOf(query, invocation.filters ?? ITEM_FILTERS),
  };
  await withBackend(
    ctx,
    async (backend, progress) => {
      progress.clear();
      printDatasetWarnings(ctx, backend);
      progress.phase(ctx.settings.mode === 'api' ? 'asking the API' : 'attributing conversions');
      if (all) {
        const stream = await backend.allItems(query);
        const count = await writeAll(ctx, ITEM_KIND, stream, query.offset, progress);
        if (stream.totalCount === 0) await explainEmpty(ctx, backend, 'conversions', request);
        else pageSummary(ctx, { start: query.offset, count, totalCount: stream.totalCount }, 'conversions', period, true);
      } else {
        const page = await backend.items(query);
        progress.done();
        await ctx.output.page(ITEM_KIND, page);
        if (page.paging.totalCount === 0) await explainEmpty(ctx, backend, 'conversions', request);
        else pageSummary(ctx, page.paging, 'conversions', period, false);
      }
    },
    { progress: true },
  );
}

export default defineHandler<ItemsFlags>({
  async run(ctx, _args, flags) {
    await listItems(
      ctx,
      {
        dateFrom: flags.from,
        dateTo: flags.to,
        sourceId: flags.source,
        sourceType: flags.sourceType,
        smartflowId: flags.smartflow,
        deliveryId: flags.delivery,
        contactId: flags.contact,
        orderId: flags.order,
        ...pagingParams(flags),
      },
      flags.all ?? false,
    );
  },
});
