import { UsageError } from '../errors.js';
import { defaultPeriod, type RawParams } from '../model/query.js';
import { SOURCE_TYPES } from '../model/types.js';
import { ITEM_FILTER_OPTIONS, listItems, type ItemsFlags } from './items.js';
import { defineCommand } from './registry.js';
import { PAGING_OPTIONS, PERIOD_OPTIONS, pagingParams } from './shared.js';

/**
 * The items filter behind an aggregate row: its detailUrl (one of the three
 * per-source paths), a source id, or TYPE:ID.
 */
export function drillTarget(target: string): RawParams {
  const path = target.replace(/^[a-z]+:\/\/[^/]+/i, '').replace(/[?#].*$/, '');
  const segments = path.split('/').filter(Boolean);
  const at = segments.indexOf('v1');
  const rest = at >= 0 ? segments.slice(at + 1) : segments;
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw new UsageError(`cannot read "${target}": bad percent-encoding`);
    }
  };
  if (path.startsWith('/') || at >= 0) {
    if (rest[0] === 'campaigns' && rest.length === 3 && rest[2] === 'conversions') {
      return { campaignId: decode(rest[1]!) };
    }
    if (rest[0] === 'deliveries' && rest.length === 3 && rest[2] === 'conversions') {
      return { smartflowId: decode(rest[1]!) };
    }
    if (rest[0] === 'deliveries' && rest.length === 4 && rest[3] === 'conversions') {
      return { smartflowId: decode(rest[1]!), deliveryId: decode(rest[2]!) };
    }
    throw new UsageError(
      `"${target}" is not a detailUrl: expected /v1/campaigns/ID/conversions, /v1/deliveries/SMARTFLOW/conversions or /v1/deliveries/SMARTFLOW/DELIVERY/conversions`,
    );
  }
  const typed = /^(campaign|automation|smartflow):(.+)$/.exec(target);
  if (typed) return { sourceType: typed[1], sourceId: typed[2] };
  if (target.trim() === '') throw new UsageError(`give a detailUrl or a source id (types: ${SOURCE_TYPES.join(', ')})`);
  return { sourceId: target };
}

export default defineCommand<ItemsFlags>({
  name: 'drill',
  summary: 'the conversion records behind a report row',
  args: '<detailUrl|sourceId>',
  options: [...PERIOD_OPTIONS, ...ITEM_FILTER_OPTIONS.filter((o) => !/--(source|source-type|smartflow|delivery) /.test(o.flags)), ...PAGING_OPTIONS],
  examples: [
    'convx drill /v1/campaigns/k-3/conversions --from 2024-03-01 --to 2024-03-31',
    'convx drill /v1/deliveries/sf-1/d-2/conversions',
    'convx drill automation:a-2 --all -o csv',
  ],
  async run(ctx, args, flags) {
    const target = drillTarget(args[0] ?? '');
    // Without dates, the period of a default report: the 30 days ending today.
    const { dateFrom, dateTo } = defaultPeriod(flags.from, flags.to, ctx.io.now());
    await listItems(
      ctx,
      { ...target, dateFrom, dateTo, contactId: flags.contact, orderId: flags.order, ...pagingParams(flags) },
      flags.all ?? false,
    );
  },
});
