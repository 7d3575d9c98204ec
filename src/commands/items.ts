import type { Context } from '../context.js';
import { parseItemsQuery, type RawParams } from '../model/query.js';
import { defineHandler } from './registry.js';
import {
  ITEM_KIND,
  pageSummary,
  pagingParams,
  parseFlags,
  printDatasetWarnings,
  withBackend,
  writeAll,
  type PagingFlags,
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

/** Lists conversion records for an items query (shared by items and drill). */
export async function listItems(ctx: Context, raw: RawParams, all: boolean): Promise<void> {
  const query = parseFlags(() => parseItemsQuery(raw, { allowCampaignId: true }));
  ctx.output.check(ITEM_KIND);
  const period = `${query.dateFrom}..${query.dateTo}`;
  await withBackend(ctx, async (backend) => {
    printDatasetWarnings(ctx, backend);
    if (all) {
      const stream = await backend.allItems(query);
      const count = await writeAll(ctx, ITEM_KIND, stream, query.offset);
      pageSummary(ctx, { start: query.offset, count, totalCount: stream.totalCount }, 'conversions', period, true);
    } else {
      const page = await backend.items(query);
      await ctx.output.page(ITEM_KIND, page);
      pageSummary(ctx, page.paging, 'conversions', period, false);
    }
  });
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
