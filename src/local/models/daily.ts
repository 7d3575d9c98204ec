/**
 * The per-day sums, made where conv holds every transaction: they let a report of any period read
 * a few rows per day instead of every transaction (queries.ts). A contact counts once in a period:
 * on the one day of it in the period whose previous day lies before the period, so unique contacts
 * are a count of rows, never a DISTINCT over the period's transactions.
 */
import { PER_CURRENCY_FROM_DAYS, PER_SOURCE } from '../queries.js';
import { sql } from '../sql.js';
import type { Relation } from './relation.js';

export const REPORT_DAY: Relation = {
  name: 'report_day',
  holds: "the sums of each day, source (source_key) and order currency, exact decimals, with the day's first and last conversion and the count of transactions without a usable exchange rate (a report of the day is then a data error)",
  reads: ['conv', 'source_info'],
  select: (m) => sql`
      SELECT c.day, i.source_key, c.currency,
        count(*) FILTER (WHERE NOT c.is_refund) AS n,
        sum(c.amount_wo_tax) FILTER (WHERE NOT c.is_refund) AS wo,
        sum(c.amount_w_tax) FILTER (WHERE NOT c.is_refund) AS w,
        count(*) FILTER (WHERE c.is_refund) AS rn,
        sum(c.amount_wo_tax) FILTER (WHERE c.is_refund) AS rwo,
        sum(c.amount_w_tax) FILTER (WHERE c.is_refund) AS rw,
        sum(c.ref_wo) FILTER (WHERE NOT c.is_refund) AS ref_wo,
        sum(c.ref_w) FILTER (WHERE NOT c.is_refund) AS ref_w,
        sum(c.ref_wo) FILTER (WHERE c.is_refund) AS ref_rwo,
        sum(c.ref_w) FILTER (WHERE c.is_refund) AS ref_rw,
        min(c.datetime) FILTER (WHERE NOT c.is_refund) AS first_at,
        max(c.datetime) FILTER (WHERE NOT c.is_refund) AS last_at,
        -- transactions without a usable exchange rate (a report of the day is then a data error)
        count(*) FILTER (WHERE c.ref_w IS NULL) AS unpriced
      FROM ${m.relation('conv')} c JOIN ${m.relation('source_info')} i ON i.source_type = c.source_type AND i.source_id = c.source_id
      GROUP BY c.day, i.source_key, c.currency
      ORDER BY c.day, i.source_key, c.currency`,
};

export const CONTACT_DAY: Relation = {
  name: 'contact_day',
  holds: 'each day a contact converted through a source (source_key), with the previous such day (prev_day)',
  reads: ['conv', 'source_info'],
  select: (m) => sql`
      WITH converted AS (
        SELECT DISTINCT c.day, i.source_key, c.contact_id
        FROM ${m.relation('conv')} c JOIN ${m.relation('source_info')} i ON i.source_type = c.source_type AND i.source_id = c.source_id
        WHERE NOT c.is_refund)
      SELECT day, source_key, lag(day) OVER (PARTITION BY source_key, contact_id ORDER BY day) AS prev_day
      FROM converted ORDER BY day, source_key`,
};

export const PLUGIN_CONTACT_DAY: Relation = {
  name: 'plugin_contact_day',
  holds: 'each day a contact converted through any source of the plugin, with the previous such day (prev_day): unique contacts of a series or total over every source',
  reads: ['conv'],
  select: (m) => sql`
      WITH converted AS (SELECT DISTINCT day, contact_id FROM ${m.relation('conv')} WHERE NOT is_refund)
      SELECT day, lag(day) OVER (PARTITION BY contact_id ORDER BY day) AS prev_day
      FROM converted ORDER BY day`,
};

export const PLUGIN_DAY: Relation = {
  name: 'plugin_day',
  holds: "the figures of each day over every source, as a series by day shows them: report_day's sums (in the reference currency, with the day's breakdown per order currency), the first and last conversion, and the contacts who converted that day (uc)",
  reads: ['report_day', 'plugin_contact_day'],
  select: (m) => sql`
      WITH per_currency AS (${PER_CURRENCY_FROM_DAYS(m.relation('report_day'), sql`true`, sql`day`)}),
      ${PER_SOURCE(sql`day`, sql` min(first_at) AS first_at, max(last_at) AS last_at,`)},
      contacts AS (SELECT day, count(*) AS uc FROM ${m.relation('plugin_contact_day')} GROUP BY day)
      SELECT g.*, coalesce(u.uc, 0) AS uc FROM per_source g LEFT JOIN contacts u USING (day) ORDER BY day`,
};

/** The per-day sums in the order they are made. */
export const DAILY: readonly Relation[] = [REPORT_DAY, CONTACT_DAY, PLUGIN_CONTACT_DAY, PLUGIN_DAY];
