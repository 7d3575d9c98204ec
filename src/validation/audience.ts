/**
 * Audience values that no contact has (issue 20): a list id in `lists` or
 * `excludeLists`, a language or a country code is an error (a mistyped exclude
 * list excludes nobody, a mistyped language or country silently drops those
 * recipients); a contact id the dataset does not have is a warning (a stale id
 * of a removed contact changes nobody else's e-mail). Pure: the SQL side finds
 * the values (src/local/validate.ts).
 */
import { closest } from '../model/closest.js';
import type { Finding } from '../model/validation.js';
import type { Findings } from './delivery.js';

/** The audience's keys that name values of the contacts. */
export const AUDIENCE_VALUE_KEYS = ['lists', 'excludeLists', 'contactIds', 'languages', 'countries'] as const;
export type AudienceValueKey = (typeof AUDIENCE_VALUE_KEYS)[number];

/** What the SQL side found: the request's values no contact has, and known values to suggest (none for contact ids). */
export interface UnknownAudience {
  missing: Partial<Record<AudienceValueKey, string[]>>;
  known: { lists: string[]; languages: string[]; countries: string[] };
}

/** The most values of one key named one by one; the rest are counted in one finding. */
export const MAX_NAMED_VALUES = 10;

const RULES: Record<AudienceValueKey, { code: string; severity: 'errors' | 'warnings'; what: (v: string) => string; known?: keyof UnknownAudience['known'] }> = {
  lists: { code: 'unknown_list', severity: 'errors', what: (v) => `no contact is on list ${v}, so it selects nobody`, known: 'lists' },
  excludeLists: { code: 'unknown_list', severity: 'errors', what: (v) => `no contact is on list ${v}, so excluding it excludes nobody`, known: 'lists' },
  contactIds: { code: 'unknown_contact', severity: 'warnings', what: (v) => `no contact ${v} in the dataset; nobody gets the e-mail for it` },
  languages: { code: 'unknown_language', severity: 'errors', what: (v) => `no contact has language ${v}`, known: 'languages' },
  countries: { code: 'unknown_country', severity: 'errors', what: (v) => `no contact has country ${v}`, known: 'countries' },
};

/** The known values nearest an unknown one; for two- or three-letter codes only those one letter off (XX is not near CZ). */
function nearest(value: string, known: string[], code: boolean): string[] {
  const offByOne = (k: string) => k.length === value.length && [...k.toLowerCase()].filter((c, i) => c !== value[i]!.toLowerCase()).length === 1;
  return closest(value, known).filter((k) => k !== value && (!code || offByOne(k)));
}

/** A finding per unknown value (at most MAX_NAMED_VALUES a key, then one counting the rest), naming the value and the field. */
export function unknownAudienceFindings(found: UnknownAudience): Findings {
  const findings: Findings = { errors: [], warnings: [] };
  for (const key of AUDIENCE_VALUE_KEYS) {
    const values = found.missing[key] ?? [];
    if (!values.length) continue;
    const rule = RULES[key];
    const field = `audience.${key}`;
    for (const value of values.slice(0, MAX_NAMED_VALUES)) {
      const near = rule.known ? nearest(value, found.known[rule.known], key === 'languages' || key === 'countries') : [];
      const hint = near.length ? `; did you mean ${near[0]}?` : '';
      findings[rule.severity].push({ code: rule.code, message: `${field}: ${rule.what(value)}${hint}`, field });
    }
    const rest = values.length - MAX_NAMED_VALUES;
    if (rest > 0) {
      const finding: Finding = { code: rule.code, message: `${field}: ${rest} more values no contact has (${values.length} in all)`, field, count: rest };
      findings[rule.severity].push(finding);
    }
  }
  return findings;
}
