/** The links of a source and of a record (docs/reporting.md, Identity and links), as SQL over their columns. */
import { urlEncode, urlSegment } from '../../model/url.js';
import { sql, trusted, type Sql } from '../sql.js';

export { urlEncode };

/** Where the columns lie: unqualified, or in the relation aliased i (a report's source_info). */
export type Qualifier = '' | 'i.';

type LinkColumn = 'source_type' | 'campaign_id' | 'smartflow_id' | 'delivery_id' | 'contact_id' | 'source_id';

/** A column the links read, qualified. */
export const column = (qualifier: Qualifier, name: LinkColumn): Sql => sql`${trusted(qualifier)}${trusted(name)}`;

/** urlSegment (model/url.ts) in SQL: an id as one segment of a path, url_encode's bytes but `.` and `..` as `%2E` and `%2E%2E`; null stays null. */
const segment = (value: Sql): Sql => sql`CASE WHEN ${value} IN ('.', '..') THEN replace(${value}, '.', '%2E') ELSE url_encode(${value}) END`;

/** The path of a source's detailUrl (queries.ts adds the query string naming the source and period), from columns source_type, campaign_id, smartflow_id, delivery_id. */
export function detailPathSql(qualifier: Qualifier = ''): Sql {
  const c = (name: LinkColumn) => column(qualifier, name);
  return sql`CASE WHEN ${c('source_type')} = 'smartflow'
    THEN '/v1/deliveries/' || ${segment(c('smartflow_id'))} || coalesce('/' || ${segment(c('delivery_id'))}, '') || '/conversions'
    ELSE '/v1/campaigns/' || ${segment(c('campaign_id'))} || '/conversions' END`;
}

/** A record's activityUrl: the recipient's activity in the delivery. */
export function activityUrlSql(qualifier: Qualifier = ''): Sql {
  const c = (name: LinkColumn) => column(qualifier, name);
  return sql`CASE WHEN ${c('source_type')} = 'smartflow'
    THEN '/v1/deliveries/' || ${segment(c('smartflow_id'))} || coalesce('/' || ${segment(c('delivery_id'))}, '')
         || '/recipients/' || ${segment(c('contact_id'))} || '/activity'
    ELSE '/v1/campaigns/' || ${segment(c('campaign_id'))} || '/recipients/' || ${segment(c('contact_id'))} || '/activity' END`;
}


/** The columns the links read, as a row holds them (contact_id: the record's contactId). */
export type LinkValues = Partial<Record<LinkColumn, unknown>>;

/** SQL's `||`: null when any part is null. */
const concat = (...parts: (string | null)[]): string | null => (parts.includes(null) ? null : parts.join(''));
const encoded = (value: unknown): string | null => (value === null || value === undefined ? null : urlEncode(String(value)));
const segmentOf = (value: unknown): string | null => (value === null || value === undefined ? null : urlSegment(String(value)));

/** The path of the delivery or campaign, as detailPathSql and activityUrlSql begin it. */
function sourcePath(row: LinkValues): string | null {
  if (row.source_type !== 'smartflow') return concat('/v1/campaigns/', segmentOf(row.campaign_id));
  const delivery = segmentOf(row.delivery_id);
  return concat('/v1/deliveries/', segmentOf(row.smartflow_id), delivery === null ? '' : `/${delivery}`);
}

/** A record's detailUrl as detailUrlWithQuery (queries.ts) makes it in SQL, byte for byte; detailQuery: its constant tail. */
export function detailUrlOf(row: LinkValues, detailQuery: string): string | null {
  return concat(sourcePath(row), '/conversions?sourceType=', encoded(row.source_type), '&sourceId=', encoded(row.source_id), detailQuery);
}

/** A record's activityUrl as activityUrlSql makes it, byte for byte. */
export function activityUrlOf(row: LinkValues): string | null {
  return concat(sourcePath(row), '/recipients/', segmentOf(row.contact_id), '/activity');
}
