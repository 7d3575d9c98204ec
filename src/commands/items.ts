import type { Backend } from '../backend.js';
import type { Context } from '../context.js';
import { parseItemsQuery, type RawParams } from '../model/query.js';
import { defineHandler } from './registry.js';
import { filterNames } from '../model/parameters.js';
import type { CommandFlags } from './options.js';
import { filtersOf, ITEM_KIND, parseFlags, periodParams, periodText, printListing, type ResultRequest, withBackend } from './shared.js';


/**
 * How a listing was asked for, so that an empty result can say so: the command with its
 * positional arguments (default "items"), and --from/--to as typed (default: raw's dates).
 */
export interface ItemsInvocation {
  command?: string;
  given?: ResultRequest['given'];
  /** What gave a bound of `given` other than its flag (drill: a detailUrl's dateFrom or dateTo). */
  givenBy?: ResultRequest['givenBy'];
  /** The parameters the command takes as flags, to name as filters (default: every items filter). */
  filters?: readonly string[];
  /** The short period flag that chose the period, as typed (`--month 2024-03`). */
  chosen?: string | undefined;
  /** The source the command's argument fixes, as typed (drill's target), for an empty result to name. */
  source?: string;
  /** Runs on the opened backend before the listing (drill: is the target known at all?); it may name the source anew (a smartflow id, a source's name): the parameters to list instead. */
  before?: (backend: Backend) => Promise<RawParams | void>;
}

/** Lists conversion records for an items query (shared by items and drill). */
export async function listItems(ctx: Context, raw: RawParams, all: boolean, invocation: ItemsInvocation = {}): Promise<void> {
  const parsed = parseFlags(() => parseItemsQuery(raw, { campaignId: true }));
  ctx.output.check(ITEM_KIND);
  const { chosen } = invocation;
  const period = periodText(parsed, chosen);
  const request: ResultRequest = {
    command: invocation.command ?? 'items',
    period: parsed,
    given: invocation.given ?? { from: raw.dateFrom, to: raw.dateTo },
    filters: filtersOf(parsed, invocation.filters ?? filterNames('items')),
    ...(chosen === undefined ? {} : { chosen }),
    ...(invocation.source === undefined ? {} : { source: invocation.source }),
    ...(invocation.givenBy === undefined ? {} : { givenBy: invocation.givenBy }),
  };
  await withBackend(
    ctx,
    async (backend, progress) => {
      const revised = await invocation.before?.(backend);
      const query = revised ? parseFlags(() => parseItemsQuery(revised, { campaignId: true })) : parsed;
      return printListing(ctx, backend, progress, {
        kind: ITEM_KIND,
        noun: 'conversions',
        request,
        offset: parsed.offset,
        period,
        ...(all ? { all: () => backend.allItems(query) } : {}),
        page: () => backend.items(query),
      });
    },
    { progress: true },
  );
}

export default defineHandler<CommandFlags<'items'>>({
  async run(ctx, _args, flags) {
    const { raw, chosen } = periodParams('items', flags, ctx);
    await listItems(ctx, raw, flags.all ?? false, { chosen });
  },
});
