/** The links of a record built in JavaScript (models/links.ts) are the bytes DuckDB's SQL makes of the same columns. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../src/local/db.js';
import { activityUrlOf, activityUrlSql, detailPathSql, detailUrlOf, urlEncode, type LinkValues } from '../src/local/models/links.js';
import { sql } from '../src/local/sql.js';

let db: Database;
beforeAll(async () => {
  db = await Database.open();
});
afterAll(() => db.close());

describe('links built in JavaScript', () => {
  it('urlEncode is url_encode for every code point (every 7th above the BMP)', async () => {
    const rows = await db.all<{ cp: bigint; v: string }>(
      sql`SELECT cp, url_encode('a' || chr(CAST(cp AS INTEGER)) || 'Z b') AS v
          FROM (SELECT * FROM range(1, 55296) t(cp) UNION ALL SELECT * FROM range(57344, 1114112, 7) t(cp))`,
    );
    const differ = rows.filter((r) => urlEncode(`a${String.fromCodePoint(Number(r.cp))}Z b`) !== r.v);
    expect(rows.length).toBeGreaterThan(200_000);
    expect(differ.map((r) => Number(r.cp)).slice(0, 5)).toEqual([]);
  });

  it('detailUrlOf and activityUrlOf are the SQL links, nulls included', async () => {
    const odd = "a b/c?d=e&f#g%h+i~j.k_l-m!'()*é😀";
    const cases: LinkValues[] = [];
    for (const source_type of ['campaign', 'smartflow', null]) {
      for (const smartflow_id of ['sf-1', odd, null]) {
        for (const delivery_id of ['d-1', odd, null]) {
          for (const campaign_id of ['k-1', null]) {
            cases.push({ source_type, source_id: odd, campaign_id, smartflow_id, delivery_id, contact_id: odd });
          }
        }
      }
    }
    cases.push({ source_type: 'smartflow', source_id: null, campaign_id: 'k', smartflow_id: 's', delivery_id: 'd', contact_id: null });
    // ids that are dot segments, '%2E' and '%2E%2E' in a path (model/url.ts); '...' is not one
    for (const dots of ['.', '..', '...']) {
      cases.push({ source_type: 'campaign', source_id: dots, campaign_id: dots, smartflow_id: null, delivery_id: null, contact_id: dots });
      cases.push({ source_type: 'smartflow', source_id: dots, campaign_id: null, smartflow_id: dots, delivery_id: dots, contact_id: dots });
    }
    const tail = '&dateFrom=2025-01-01&dateTo=2025-01-31';
    for (const row of cases) {
      const v = (name: keyof LinkValues) => row[name] as string | null;
      const found = await db.one<{ detail: string | null; activity: string | null }>(
        sql`SELECT ${detailPathSql()} || '?sourceType=' || url_encode(source_type) || '&sourceId=' || url_encode(source_id) || ${tail} AS detail,
                   ${activityUrlSql()} AS activity
            FROM (SELECT CAST(${v('source_type')} AS VARCHAR) AS source_type, CAST(${v('source_id')} AS VARCHAR) AS source_id,
                         CAST(${v('campaign_id')} AS VARCHAR) AS campaign_id, CAST(${v('smartflow_id')} AS VARCHAR) AS smartflow_id,
                         CAST(${v('delivery_id')} AS VARCHAR) AS delivery_id, CAST(${v('contact_id')} AS VARCHAR) AS contact_id)`,
      );
      expect({ row, detail: detailUrlOf(row, tail), activity: activityUrlOf(row) }).toEqual({ row, ...found });
    }
  });
});
