import type { Context } from '../context.js';
import { parseItemsQuery, type RawParams } from '../model/query.js';
import { defineHandler } from './registry.js';
import {
  filtersOf,
  ITEM_KIND,
  type PagingFlags,
  pagingParams,
  parseFlags,
  printListing,
  type ResultRequest,
  withBackend,
} from './shared.js';
import { flagKey, ITEM_ID_FILTERS } from '../model/parameters.js';

export interface ItemsFlags extends PagingFlags {
  from?: string;
  to?: string;
  /** The id filters, each under its flag's key (flagKey of model/parameters.ts). */
  [filter: string]: string | boolean | undefined;
}

/** The items filters, in the order an empty result names them. */
const ITEM_FILTERS = [...ITEM_ID_FILTERS.map((f) => f.name), 'campaignId', 'country', 'currency'] as const;

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
    (backend, progress) =>
      printListing(ctx, backend, progress, {
        kind: ITEM_KIND,
        noun: 'conversions',
        request,
        offset: query.offset,
        period,
        ...(all ? { all: () => backend.allItems(query) } : {}),
        page: () => backend.items(query),
      }),
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
        // each id filter from its flag (model/parameters.ts)
        ...Object.fromEntries(ITEM_ID_FILTERS.map((f) => [f.name, flags[flagKey(f.flag)] as string | undefined])),
        ...pagingParams(flags),
      },
      flags.all ?? false,
    );
  },
});
