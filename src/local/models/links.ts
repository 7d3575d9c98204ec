/** The links of a source and of a record (docs/reporting.md, Identity and links), as SQL over their columns. */
import { sql, trusted, type Sql } from '../sql.js';

/** Where the columns lie: unqualified, or in the relation aliased i (a report's source_info). */
export type Qualifier = '' | 'i.';

type LinkColumn = 'source_type' | 'campaign_id' | 'smartflow_id' | 'delivery_id' | 'contact_id' | 'source_id';

/** A column the links read, qualified. */
export const column = (qualifier: Qualifier, name: LinkColumn): Sql => sql`${trusted(qualifier)}${trusted(name)}`;

/** The path of a source's detailUrl (queries.ts adds the query string naming the source and period), from columns source_type, campaign_id, smartflow_id, delivery_id. */
export function detailPathSql(qualifier: Qualifier = ''): Sql {
  const c = (name: LinkColumn) => column(qualifier, name);
  return sql`CASE WHEN ${c('source_type')} = 'smartflow'
    THEN '/v1/deliveries/' || url_encode(${c('smartflow_id')}) || coalesce('/' || url_encode(${c('delivery_id')}), '') || '/conversions'
    ELSE '/v1/campaigns/' || url_encode(${c('campaign_id')}) || '/conversions' END`;
}

/** A record's activityUrl: the recipient's activity in the delivery. */
export function activityUrlSql(qualifier: Qualifier = ''): Sql {
  const c = (name: LinkColumn) => column(qualifier, name);
  return sql`CASE WHEN ${c('source_type')} = 'smartflow'
    THEN '/v1/deliveries/' || url_encode(${c('smartflow_id')}) || coalesce('/' || url_encode(${c('delivery_id')}), '')
         || '/recipients/' || url_encode(${c('contact_id')}) || '/activity'
    ELSE '/v1/campaigns/' || url_encode(${c('campaign_id')}) || '/recipients/' || url_encode(${c('contact_id')}) || '/activity' END`;
}

