import type { Context } from '../context.js';
import { parseItemsQuery, type RawParams } from '../model/query.js';
import { defineCommand, type OptionDefinition } from './registry.js';
import {
  FILTER_OPTIONS,
  ITEM_KIND,
  PAGING_OPTIONS,
  PERIOD_OPTIONS,
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

export const ITEM_FILTER_OPTIONS: OptionDefinition[] = [
  { flags: '--source <id>', description: 'only this source id' },
  { flags: '--source-type <type>', description: 'only this source type: campaign, automation or smartflow' },
  { flags: '--smartflow <id>', description: 'only this smartflow' },
  { flags: '--delivery <id>', description: 'only this delivery' },
  { flags: '--contact <id>', description: 'only this contact' },
  { flags: '--order <id>', description: 'only this order id' },
  ...FILTER_OPTIONS,
];

export default defineCommand<ItemsFlags>({
  name: 'items',
  summary: 'individual conversion records (GET /conversions/items)',
  options: [...PERIOD_OPTIONS, ...ITEM_FILTER_OPTIONS, ...PAGING_OPTIONS],
  examples: [
    'convx items --data samples/shop --from 2024-03-01 --to 2024-03-31',
    'convx items --from 2024-03-01 --to 2024-03-31 --source-type smartflow --smartflow sf-2',
    'convx items --from 2024-01-01 --to 2024-12-31 --contact c-17 -o json',
    'convx items --from 2024-01-01 --to 2024-12-31 --all -o csv > conversions.csv',
  ],
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
