/**
 * The dataset's optional tables as the attribution reads them: one row per key, or the rates to
 * the reference currency; where the dataset lacks the table, an empty relation of its columns.
 */
import { EMPTY, sql, type Sql } from '../sql.js';
import { optional, type ModelInput } from './relation.js';

/** The sources of the plugin, the first row of each (source_type, source_id) in file order. */
export function firstSources(input: ModelInput): Sql {
  return optional(input, 'sources', undefined, () => sql`(SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY source_type, source_id ORDER BY row_id) AS k
           FROM ${input.relation('sources')}) WHERE k = 1)`);
}

/**
 * The contacts' columns a conversion shows, the first row of each contact_id in file order; of the
 * contacts `among` holds (a relation of contact_id) where given: every row of those, so the same first rows.
 */
export function firstContacts(input: ModelInput, among?: Sql): Sql {
  const only = among ? sql`WHERE contact_id IN (SELECT contact_id FROM ${among})` : EMPTY;
  return optional(input, 'contacts', ['contact_id', 'client_contact_id', 'first_name', 'surname', 'country'], () => sql`(SELECT contact_id, client_contact_id, first_name, surname, country FROM (
           SELECT *, row_number() OVER (PARTITION BY contact_id ORDER BY row_id) AS k FROM ${input.relation('contacts')} ${only}) WHERE k = 1)`);
}

/**
 * The exchange rates to the reference currency (a row without reference_currency is to it), one
 * per currency and date: the first in file order where the files give several (`data check`
 * reports those that differ as fx_duplicate), so that a join never picks one by scan order.
 */
export function referenceRates(input: ModelInput): Sql {
  return optional(input, 'fx', ['currency', 'date', 'rate'], () => sql`(SELECT currency, date, rate FROM (
           SELECT currency, date, rate, row_number() OVER (PARTITION BY currency, date ORDER BY row_id) AS k FROM ${input.relation('fx')}
           WHERE reference_currency IS NULL OR reference_currency = ${input.referenceCurrency}) WHERE k = 1)`);
}
