import { UsageError } from '../errors.js';
import { defaultPeriod, type RawParams } from '../model/query.js';
import { SOURCE_TYPES } from '../model/types.js';
import { listItems, type ItemsFlags } from './items.js';
import { defineHandler } from './registry.js';
import { pagingParams } from './shared.js';

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

export default defineHandler<ItemsFlags>({
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
