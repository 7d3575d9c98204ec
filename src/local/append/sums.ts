/**
 * The stored per-day sums of a scope (models/daily.ts) brought up to date after its conv changed
 * (reattribute.ts): each sum's rows of the days that changed are made again as a full import makes
 * them, from the stored conv, and the other days' rows keep theirs, with their sources' new
 * source_key. A contact's rows carry the previous day it converted (prev_day), so the days whose
 * rows are made again are the changed ones and every later day of a contact who changed.
 */
import { CONTACT_DAY, PLUGIN_CONTACT_DAY, PLUGIN_DAY, REPORT_DAY } from '../models/daily.js';
import type { Relation } from '../models/relation.js';
import { sql, trusted, type Sql } from '../sql.js';
import { day, modelInput, workTable, type Update } from './input.js';

/** One stored sum: its relation, the days it is made again for, what it reads there, and its order. */
interface Sum {
  relation: Relation;
  days: Sql;
  reads: Record<string, Sql>;
  order: 'day, source_key, currency' | 'day, source_key' | 'day';
  /** Keyed by source_key: its other days' rows take the new keys. */
  keyed: boolean;
}

async function remake(u: Update, sum: Sum, rekeyed: boolean): Promise<void> {
  const db = u.scope.db;
  const stored = u.scope.relation(sum.relation.name);
  await db.exec(sql`DELETE FROM ${stored} WHERE day IN ${sum.days}`);
  if (sum.keyed && rekeyed) {
    await db.exec(sql`UPDATE ${stored} s SET source_key = k.new_key FROM ${workTable(u, 'keys')} k WHERE s.source_key = k.old_key`);
  }
  // Stored in day order, as a full import stores them (a period's zonemaps skip the other days): new days after the
  // stored ones keep it; an earlier day made again is written in its place.
  const late = await db.one<{ late: boolean | null }>(sql`SELECT (SELECT min(day) FROM ${sum.days}) <= (SELECT max(day) FROM ${stored}) AS late`);
  const select = await sum.relation.select(modelInput(u, sum.reads));
  const order = trusted(sum.order);
  await db.exec(sql`INSERT INTO ${stored} SELECT * FROM (${select}) WHERE day IN ${sum.days} ORDER BY ${order}`);
  if (late?.late) await db.exec(sql`CREATE OR REPLACE TABLE ${stored} AS SELECT * FROM ${stored} ORDER BY ${order}`);
}

/** The per-day sums of the scope made again for the days whose rows changed (see the module's comment); rekeyed: some sources' source_key changed. */
export async function updateSums(u: Update, rekeyed: boolean): Promise<void> {
  const db = u.scope.db;
  const w = (name: string) => workTable(u, name);
  const conv = u.scope.relation('conv');
  await db.exec(sql`CREATE TABLE ${w('contact_days')} AS
    SELECT day FROM ${w('days')}
    UNION SELECT DISTINCT day FROM ${conv}
    WHERE NOT is_refund AND contact_id IN (SELECT contact_id FROM ${w('contacts_changed')}) AND day >= (SELECT min(day) FROM ${w('days')})`);
  const days = sql`(SELECT day FROM ${w('days')})`;
  const contactDays = sql`(SELECT day FROM ${w('contact_days')})`;
  // Every conversion of the contacts who converted on those days: a row's prev_day may lie on any earlier day.
  const span = await db.one<{ lo: string | null; hi: string | null }>(
    sql`SELECT strftime(min(day), '%Y-%m-%d') AS lo, strftime(max(day), '%Y-%m-%d') AS hi FROM ${w('contact_days')}`,
  );
  if (!span?.lo || !span.hi) return;
  await db.exec(sql`CREATE TABLE ${w('their_conv')} AS SELECT day, source_type, source_id, contact_id, is_refund FROM ${conv} WHERE contact_id IN (
    SELECT DISTINCT contact_id FROM ${conv} WHERE NOT is_refund AND day >= ${day(span.lo)} AND day <= ${day(span.hi)} AND day IN ${contactDays})`);
  const theirConv = w('their_conv');
  const info = u.scope.relation('source_info');
  const sums: Sum[] = [
    { relation: REPORT_DAY, days, reads: { conv: sql`(SELECT * FROM ${conv} WHERE day >= ${day(span.lo)} AND day <= ${day(span.hi)} AND day IN ${days})`, source_info: info }, order: 'day, source_key, currency', keyed: true },
    { relation: CONTACT_DAY, days: contactDays, reads: { conv: theirConv, source_info: info }, order: 'day, source_key', keyed: true },
    { relation: PLUGIN_CONTACT_DAY, days: contactDays, reads: { conv: theirConv }, order: 'day', keyed: false },
    {
      relation: PLUGIN_DAY,
      days: contactDays,
      reads: {
        report_day: sql`(SELECT * FROM ${u.scope.relation('report_day')} WHERE day IN ${contactDays})`,
        plugin_contact_day: sql`(SELECT * FROM ${u.scope.relation('plugin_contact_day')} WHERE day IN ${contactDays})`,
      },
      order: 'day',
      keyed: false,
    },
  ];
  for (const sum of sums) await remake(u, sum, rekeyed);
}
