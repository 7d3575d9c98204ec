/**
 * The items filters that take one id (or one source type), defined once: the
 * interface's name, the CLI flag and its help, the server's description, and
 * the column of the attributed transactions it compares. The commander options
 * (commands/options.ts), the server's request schemas (schemas.ts), the parser
 * (query.ts), the API client's query string (api/backend.ts), the flags a
 * command passes (commands/items.ts) and the local SQL filter (local/queries.ts)
 * all derive from this table: adding such a filter is a row here (and the
 * column in the attribution). The period, paging, sort and the code lists
 * (country, currency) have rules of their own in query.ts.
 *
 * Plain data: `convx --help` loads it.
 */

export interface FilterParameter {
  /** The interface's name: the query parameter and the ItemsQuery key. */
  name: 'sourceId' | 'sourceType' | 'smartflowId' | 'deliveryId' | 'contactId' | 'orderId';
  /** The CLI flag as commander declares it. */
  flag: string;
  /** The CLI help. */
  help: string;
  /** The description in the server's request schema (OpenAPI). */
  description: string;
  /** The column of the attributed transactions (conv) it must equal. */
  column: string;
  /** Also a filter of the per-source aliases (/v1/campaigns/{id}/conversions ...), whose path fixes the source. */
  alias: boolean;
}

export const ITEM_ID_FILTERS: readonly FilterParameter[] = [
  { name: 'sourceId', flag: '--source <id>', help: 'only this source id', description: 'only this source', column: 'source_id', alias: false },
  {
    name: 'sourceType',
    flag: '--source-type <type>',
    help: 'only this source type: campaign, automation or smartflow',
    description: 'only this source type (with sourceId: both must match)',
    column: 'source_type',
    alias: false,
  },
  { name: 'smartflowId', flag: '--smartflow <id>', help: 'only this smartflow', description: 'only this smartflow', column: 'smartflow_id', alias: false },
  { name: 'deliveryId', flag: '--delivery <id>', help: 'only this delivery', description: 'only this delivery', column: 'delivery_id', alias: false },
  { name: 'contactId', flag: '--contact <id>', help: 'only this contact', description: 'only this contact', column: 'contact_id', alias: true },
  { name: 'orderId', flag: '--order <id>', help: 'only this order id', description: 'only this order', column: 'order_id', alias: true },
];

/** The flag as typed: `--source-type <type>` is `--source-type`. */
export function flagName(flag: string): string {
  return /--[a-z0-9-]+/.exec(flag)![0];
}

/** The key commander gives a flag's value: `--source-type <type>` is `sourceType`. */
export function flagKey(flag: string): string {
  return flagName(flag)
    .slice(2)
    .replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
