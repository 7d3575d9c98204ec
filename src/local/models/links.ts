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


/** DuckDB's url_encode in JavaScript: every UTF-8 byte but A-Z a-z 0-9 - _ . ~ percent-encoded, in upper-case hex. */
export function urlEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The columns the links read, as a row holds them (contact_id: the record's contactId). */
export type LinkValues = Partial<Record<LinkColumn, unknown>>;

/** SQL's `||`: null when any part is null. */
const concat = (...parts: (string | null)[]): string | null => (parts.includes(null) ? null : parts.join(''));
const encoded = (value: unknown): string | null => (value === null || value === undefined ? null : urlEncode(String(value)));

/** The path of the delivery or campaign, as detailPathSql and activityUrlSql begin it. */
function sourcePath(row: LinkValues): string | null {
  if (row.source_type !== 'smartflow') return concat('/v1/campaigns/', encoded(row.campaign_id));
  const delivery = encoded(row.delivery_id);
  return concat('/v1/deliveries/', encoded(row.smartflow_id), delivery === null ? '' : `/${delivery}`);
}

/** A record's detailUrl as detailUrlWithQuery (queries.ts) makes it in SQL, byte for byte; detailQuery: its constant tail. */
export function detailUrlOf(row: LinkValues, detailQuery: string): string | null {
  return concat(sourcePath(row), '/conversions?sourceType=', encoded(row.source_type), '&sourceId=', encoded(row.source_id), detailQuery);
}

/** A record's activityUrl as activityUrlSql makes it, byte for byte. */
export function activityUrlOf(row: LinkValues): string | null {
  return concat(sourcePath(row), '/recipients/', encoded(row.contact_id), '/activity');
}
