/**
 * What an id names in the data (`Backend.resolve`, GET /v1/ids/{id}): the one resolver of
 * `convx order`, `contact` and `drill`. It knows orders (by id), contacts (by id, e-mail in any
 * case, client contact id; those of a contact's later rows, which are not read, as where they are), sources (by id, name, campaign id), smartflows and deliveries (by
 * id), and else the ids nearest the one given (model/closest.ts ranks them).
 */
import type { IdMatch, IdResolution } from '../backend.js';
import { closest } from '../model/closest.js';
import type { Scope } from './attribution.js';
import type { Database } from './db.js';
import type { TableName } from './schema.js';
import { EMPTY, int, sql, type Sql } from './sql.js';

/** The kinds in the order an answer lists them. */
const KINDS: IdMatch['kind'][] = ['order', 'contact', 'source', 'smartflow', 'delivery'];

/** Near candidates read per kind before closest() ranks them; the sources named when none is near. */
const CANDIDATES = 20;
const FIRST_SOURCES = 8;

type Row = { kind: IdMatch['kind']; hit: IdMatch['by']; id: string; term: string; type: string | null; name: string | null; smartflow_id: string | null };

/**
 * The contacts' first rows, one per contact_id in file order: the row every look-up reads (`data
 * check` says the later ones are not read); of the contacts that have a row matching `among` where
 * given (their first rows, which may not match: the caller asks again).
 */
export function firstContactRows(scope: Scope, among?: Sql): Sql {
  const contacts = scope.relation('contacts');
  const only = among ? sql`WHERE contact_id IN (SELECT contact_id FROM ${contacts} WHERE ${among})` : EMPTY;
  return sql`(SELECT * FROM ${contacts} ${only} QUALIFY row_number() OVER (PARTITION BY contact_id ORDER BY row_id) = 1)`;
}

/**
 * The e-mail and client contact id of each contact's later rows (not read: the first row is the
 * contact) that its first row does not carry too: an exact match says where such a key is
 * (`by` laterEmail, laterClientContactId), never what a look-up by it finds; an e-mail in lower case, so
 * that later rows of one address in other cases are one match.
 */
function laterContactKeys(scope: Scope): Sql {
  const first = firstContactRows(scope);
  return sql`SELECT 'contact', unnest(['laterEmail', 'laterClientContactId']), l.contact_id, unnest([
      CASE WHEN lower(trim(l.email)) IS DISTINCT FROM lower(trim(f.email)) THEN lower(trim(l.email)) END,
      CASE WHEN l.client_contact_id IS DISTINCT FROM f.client_contact_id THEN l.client_contact_id END]),
    NULL, coalesce(nullif(concat_ws(' ', f.first_name, f.surname), ''), f.email), NULL
    FROM ${scope.relation('contacts')} l JOIN ${first} f ON f.contact_id = l.contact_id AND f.row_id <> l.row_id`;
}

/** The contacts' keys of their first rows (a later row of an id is not read): id, e-mail and client contact id, with their names. One scan, three keys. */
function contactKeys(scope: Scope): Sql {
  const named = sql`coalesce(nullif(concat_ws(' ', first_name, surname), ''), email)`;
  return sql`SELECT 'contact' AS kind, unnest(['id', 'email', 'clientContactId']) AS hit, contact_id AS id, unnest([contact_id, trim(email), client_contact_id]) AS term, NULL AS type, ${named} AS name, NULL AS smartflow_id
      FROM ${firstContactRows(scope)}`;
}

/** Every (kind, by, id, key) the data holds: what an id may name (with later: the keys of contacts' later rows too, for exact matches). */
function candidates(scope: Scope, later = false): Sql {
  const t = (name: string) => scope.relation(name);
  const has = (name: TableName) => scope.dataset.has(name);
  const parts: Sql[] = [];
  if (has('orders')) parts.push(sql`SELECT 'order' AS kind, 'id' AS hit, order_id AS id, order_id AS term, NULL AS type, NULL AS name, NULL AS smartflow_id FROM ${t('orders')}`);
  if (has('contacts')) {
    parts.push(contactKeys(scope));
    if (later) parts.push(laterContactKeys(scope));
  }
  for (const table of ['orders', 'touches'] as const) {
    if (has(table)) parts.push(sql`SELECT 'contact', 'id', contact_id, contact_id, NULL, NULL, NULL FROM ${t(table)}`);
  }
  if (has('touches') || has('sources')) {
    const ids = [has('touches') ? sql`SELECT source_type, source_id FROM ${t('touches')}` : undefined, has('sources') ? sql`SELECT source_type, source_id FROM ${t('sources')}` : undefined].filter((s): s is Sql => s !== undefined);
    const known = sql`(SELECT i.source_type AS type, i.source_id AS id, s.name, s.campaign_id,
        CASE WHEN i.source_type = 'smartflow' THEN coalesce(s.smartflow_id, i.source_id) END AS smartflow_id, s.smartflow_name, s.delivery_id, s.delivery_name
      FROM (SELECT DISTINCT * FROM (${ids[0]!} ${ids[1] ? sql`UNION ${ids[1]}` : EMPTY})) i
      LEFT JOIN ${scope.sources()} s ON s.source_type = i.source_type AND s.source_id = i.source_id
      WHERE i.source_type IS NOT NULL AND i.source_id IS NOT NULL)`;
    // One scan of the sources' identities, five keys of each (unnest zips the lists): a source by its id, its name and
    // its campaign id (a campaign's or automation's that differs from its id), its smartflow, its delivery. A key
    // without a value (a source of no smartflow) is a NULL term or id, which kept() drops.
    parts.push(sql`SELECT unnest(['source', 'source', 'source', 'smartflow', 'delivery']), unnest(['id', 'name', 'campaignId', 'id', 'id']),
        unnest([id, id, id, smartflow_id, delivery_id]),
        unnest([id, name, CASE WHEN type <> 'smartflow' AND campaign_id <> id THEN campaign_id END, smartflow_id, delivery_id]),
        unnest([type, type, type, 'smartflow', 'smartflow']), unnest([name, name, name, smartflow_name, delivery_name]),
        unnest([NULL, NULL, NULL, NULL, smartflow_id])
      FROM ${known}`);
  }
  return parts.reduce((all, part) => sql`${all} UNION ALL ${part}`);
}

/**
 * The candidates a condition keeps, one row per (kind, hit, id, term, type, smartflow_id): sources of one id
 * and other types (campaign, automation, smartflow x-1) are several matches, as are deliveries of one id
 * in two smartflows. The condition applies before the grouping, so a look-up by id scans without
 * grouping every order.
 */
function kept(scope: Scope, where: Sql, later = false, from: Sql = candidates(scope, later)): Sql {
  return sql`SELECT kind, hit, id, term, type, max(name) AS name, smartflow_id
    FROM (${from}) WHERE id IS NOT NULL AND term IS NOT NULL AND trim(term) <> '' AND (${where}) GROUP BY ALL`;
}

/** The condition of an exact match of id: an e-mail and a source's name in any case (`drill 'spring sale'`; DuckDB's lower() on both sides, which keeps İ one character where JavaScript's makes it two), any other key as it is. */
const exactTerm = (id: string) =>
  sql`CASE WHEN hit IN ('email', 'laterEmail') THEN lower(trim(term)) = lower(${id}) WHEN hit = 'name' THEN lower(term) = lower(${id}) ELSE term = ${id} END`;

/** What the id names: its exact matches (an e-mail in any case). */
function exactly(scope: Scope, db: Database, id: string): Promise<Row[]> {
  return db.all<Row>(sql`${kept(scope, exactTerm(id), true)} ORDER BY kind, hit, type, id, smartflow_id`);
}

/**
 * The contacts whose first row carries the key as its e-mail (any case) or client contact id: the
 * matches of that kind resolveId gives, from the contacts alone (`Backend.contactsCarrying`; the
 * whole resolver reads every table: a look-up by e-mail in 500,000 orders, 770 -> 620 ms).
 */
export async function contactsCarryingKey(scope: Scope, db: Database, given: string, by: 'email' | 'clientContactId'): Promise<IdMatch[]> {
  const id = given.trim();
  if (id === '' || !scope.dataset.has('contacts')) return [];
  const rows = await db.all<Row>(sql`${kept(scope, sql`hit = ${by} AND ${exactTerm(id)}`, false, contactKeys(scope))} ORDER BY kind, hit, type, id, smartflow_id`);
  return rows.map(matchOf);
}

/** The first sources by type and id, to name when none is near. */
function firstSources(scope: Scope, db: Database): Promise<Row[]> {
  return db.all<Row>(sql`${kept(scope, sql`kind = 'source' AND hit = 'id'`)} ORDER BY type, id LIMIT ${int(FIRST_SOURCES)}`);
}

/** The candidates near the id (closest()'s rule: contained, or a few edits away, any case), a few of each kind, nearest first. */
function near(scope: Scope, db: Database, id: string): Promise<Row[]> {
  const lower = id.toLowerCase();
  const limit = int(Math.max(2, Math.ceil(id.length / 2)));
  const contained = sql`contains(lower(term), ${lower}) OR contains(${lower}, lower(term))`;
  const distance = sql`CASE WHEN ${contained} THEN 0.5 ELSE levenshtein(lower(term), ${lower}) END`;
  // The edits are at least the difference in length: only terms of about the length are measured.
  const within = sql`${contained} OR (abs(length(term) - ${int(id.length)}) <= ${limit} AND levenshtein(lower(term), ${lower}) <= ${limit})`;
  return db.all<Row>(sql`SELECT * FROM (${kept(scope, within)})
    QUALIFY row_number() OVER (PARTITION BY kind ORDER BY ${distance}, term) <= ${int(CANDIDATES)} ORDER BY kind, hit, type, id, smartflow_id`);
}

const matchOf = (r: Row): IdMatch => ({ kind: r.kind, by: r.hit, id: r.id, type: r.type, name: r.name, smartflowId: r.kind === 'delivery' ? r.smartflow_id : null });
const byKind = (a: IdMatch, b: IdMatch) => KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind);

/** The ids nearest the one given, at most three of each kind, nearest first (closest() of the keys). */
function nearest(rows: Row[], id: string): IdMatch[] {
  const out: IdMatch[] = [];
  for (const kind of KINDS) {
    const ofKind = rows.filter((r) => r.kind === kind);
    const seen = new Set<string>();
    for (const key of closest(id, ofKind.map((r) => r.term))) {
      for (const r of ofKind.filter((n) => n.term === key)) {
        if (seen.size < 3 && !seen.has(r.id)) {
          seen.add(r.id);
          out.push(matchOf(r));
        }
      }
    }
  }
  return out;
}

/**
 * What an id names in the scope's data (surrounding blanks ignored), else the ids nearest it
 * (only then: the distances to every id are the costly part) and the first sources.
 */
export async function resolveId(scope: Scope, db: Database, given: string): Promise<IdResolution> {
  const id = given.trim();
  if (id === '') return { id, matches: [], nearest: [], sources: [] };
  const matches = (await exactly(scope, db, id)).map(matchOf).sort(byKind);
  if (matches.length) return { id, matches, nearest: [], sources: [] };
  return { id, matches, nearest: nearest(await near(scope, db, id), id), sources: (await firstSources(scope, db)).map(matchOf) };
}
