import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseItemsQuery, parseReportQuery, parseTrendQuery } from '../src/model/query.js';
import { Database } from '../src/local/db.js';
import { ATTR, ATTRIBUTION, FIGURE_COLUMNS, FIGURES_ATTRIBUTION } from '../src/local/models/attribution.js';
import { DAILY } from '../src/local/models/daily.js';
import { firstContacts, firstSources, referenceRates } from '../src/local/models/inputs.js';
import { materialise, type ModelInput } from '../src/local/models/relation.js';
import { itemsSelect, reportSelect, type QueryTables } from '../src/local/queries.js';
import { trendSelect } from '../src/local/series.js';
import { columnSqlType, TABLES } from '../src/local/schema.js';
import { compile, ident, join, sql, trusted } from '../src/local/sql.js';
import { itemsQuery, reportQuery, shop, withBackend } from './helpers.js';
import type { LocalBackend } from '../src/local/backend.js';

describe('the named models (src/local/models/)', () => {
  let db: Database;
  beforeAll(async () => {
    db = await Database.open();
  });
  afterAll(() => db.close());

  /** A scope's input over an empty schema, whose dataset lacks every optional table. */
  const bare = (): ModelInput => ({
    db,
    schema: 'main',
    referenceCurrency: 'EUR',
    relation: (name) => sql`${ident(name)}`,
    has: () => false,
  });

  it('each relation reads only the dataset and the relations made before it; the runner refuses one out of order', async () => {
    const made = new Set(['orders', 'touches', 'sources', 'fx', 'contacts']);
    for (const relation of [...ATTRIBUTION, ...DAILY]) {
      for (const name of relation.reads) expect(made.has(name), `${relation.name} reads ${name}`).toBe(true);
      made.add(relation.name);
    }
    expect([...ATTRIBUTION, ...DAILY].map((r) => r.name)).toEqual(['order_head', 'clicks', 'attr', 'source_info', 'conv', 'report_day', 'contact_day', 'plugin_contact_day', 'plugin_day']);
    const figures = new Set(['orders', 'touches', 'sources', 'fx', 'contacts']);
    for (const relation of FIGURES_ATTRIBUTION) {
      for (const name of relation.reads) expect(figures.has(name), `${relation.name} reads ${name}`).toBe(true);
      figures.add(relation.name);
    }
    expect(FIGURES_ATTRIBUTION.map((r) => r.name)).toEqual(['order_head', 'clicks', 'attr', 'source_info', 'conv']);
    await expect(materialise(bare(), DAILY)).rejects.toThrow(/report_day reads conv, source_info before it is made/);
  });

  it("a missing table's stand-in is empty, with the columns and types schema.ts gives them", async () => {
    const input = bare();
    const cases = [
      { relation: firstSources(input), table: 'sources' as const, columns: TABLES.sources.columns.map((c) => c.name) },
      { relation: firstContacts(input), table: 'contacts' as const, columns: ['contact_id', 'client_contact_id', 'first_name', 'surname', 'country'] },
      { relation: referenceRates(input), table: 'fx' as const, columns: ['currency', 'date', 'rate'] },
    ];
    for (const { relation, table, columns } of cases) {
      const described = await db.all<{ column_name: string; column_type: string }>(sql`DESCRIBE SELECT * FROM ${relation}`);
      expect(described.map((d) => [d.column_name, d.column_type])).toEqual(columns.map((c) => [c, columnSqlType(table, c)]));
      expect(await db.all(sql`SELECT * FROM ${relation}`)).toEqual([]);
    }
    expect(columnSqlType('fx', 'rate')).toBe('DECIMAL(18,10)');
  });

  it("a query's SQL text depends on its shape only: its values are parameters (a server reuses the prepared statement)", () => {
    const tables: QueryTables = {
      conv: sql`s.conv`,
      sourceInfo: sql`s.source_info`,
      referenceCurrency: 'EUR',
      daily: { sums: sql`s.report_day`, contacts: sql`s.contact_day`, pluginContacts: sql`s.plugin_contact_day`, days: sql`s.plugin_day` },
    };
    const today = new Date('2025-01-01T00:00:00Z');
    const asked = [
      { dateFrom: '2024-01-01', dateTo: '2024-01-31', country: 'CZ', currency: 'EUR', q: 'sale', orderId: 'o-1' },
      { dateFrom: '2023-05-02', dateTo: '2024-12-31', country: 'SK', currency: 'CZK', q: 'win', orderId: 'o-2' },
    ];
    const shapes = [
      (v: (typeof asked)[number]) => reportSelect(tables, parseReportQuery({ dateFrom: v.dateFrom, dateTo: v.dateTo }, today)),
      (v: (typeof asked)[number]) => reportSelect(tables, parseReportQuery({ dateFrom: v.dateFrom, dateTo: v.dateTo, country: v.country, q: v.q }, today)),
      (v: (typeof asked)[number]) => itemsSelect(tables, parseItemsQuery({ dateFrom: v.dateFrom, dateTo: v.dateTo, currency: v.currency, orderId: v.orderId })),
      // a series by day and by week from the per-day sums
      (v: (typeof asked)[number]) => trendSelect(tables, parseTrendQuery({ dateFrom: v.dateFrom, dateTo: v.dateTo }, today), 'UTC'),
      (v: (typeof asked)[number]) => trendSelect(tables, parseTrendQuery({ dateFrom: v.dateFrom, dateTo: v.dateTo, interval: 'week' }, today), 'UTC'),
    ];
    for (const shape of shapes) {
      const [a, b] = asked.map((v) => compile(shape(v).select));
      expect(b!.text).toBe(a!.text);
      expect(b!.params).not.toEqual(a!.params);
      expect(a!.text).not.toMatch(/2024-01-01|CZ|EUR|sale|o-1/);
    }
  });

  it("attr's work grows with the heads and clicks, not with their product: a contact with many orders and many clicks in each window", async () => {
    // One contact: 1,000 orders over 30 days and 4,000 clicks over the 60 days before them, so each order's window holds
    // about 2,000 clicks (2,000,000 pairs). More heads than DuckDB joins by a nested loop (asof_loop_join_threshold).
    // The clicks come in fours at one instant, two of each source: the greater, k-2, takes every order.
    await db.exec(sql`
      CREATE OR REPLACE TABLE orders AS
        SELECT i AS row_id, 'o-' || i AS order_id, 'c-1' AS contact_id, TIMESTAMP '2024-03-01' + to_minutes(i * 43) AS datetime,
               CAST(10 AS DECIMAL(18,4)) AS amount_wo_tax, 'completed' AS status, false AS is_refund
        FROM range(1000) t(i)`);
    await db.exec(sql`
      CREATE OR REPLACE TABLE touches AS
        SELECT 'c-1' AS contact_id, TIMESTAMP '2024-01-31' + to_minutes((i // 4) * 86) AS datetime, 'click' AS touch,
               'campaign' AS source_type, CASE WHEN i % 2 = 0 THEN 'k-1' ELSE 'k-2' END AS source_id
        FROM range(4000) t(i)`);
    const input = bare();
    // attr's inputs made as materialise makes them, and kept (materialise drops them once attr is made).
    for (const relation of ATTRIBUTION.slice(0, ATTRIBUTION.indexOf(ATTR))) {
      await db.exec(sql`CREATE OR REPLACE ${trusted(relation.kind ?? 'TABLE')} ${ident(relation.name)} AS ${await relation.select(input)}`);
    }
    const rows = await db.all<{ explain_value: string }>(sql`EXPLAIN (ANALYZE, FORMAT JSON) ${await ATTR.select(input)}`);
    type Op = { operator_name?: string; operator_cardinality?: number; children?: Op[] };
    const largest = (op: Op): number => Math.max(op.operator_cardinality ?? 0, ...(op.children ?? []).map(largest));
    // No operator holds more rows than the two inputs together (a join of each head to its window's clicks: some 2,000,000).
    expect(largest(JSON.parse(rows[0]!.explain_value) as Op)).toBeLessThanOrEqual(5_000);
    // Each order taken by its latest click, the greater source of that instant.
    const won = await db.all<{ n: bigint; k2: bigint }>(sql`
      SELECT count(*) AS n, count(*) FILTER (WHERE source_id = 'k-2') AS k2 FROM (${await ATTR.select(input)})`);
    expect(won).toEqual([{ n: 1000n, k2: 1000n }]);
    await db.exec(sql`DROP VIEW clicks; DROP TABLE order_head; DROP TABLE orders; DROP TABLE touches`);
  });

  it('conv of a period for a query of figures holds FIGURE_COLUMNS only, each as conv of records holds it', async () => {
    await db.exec(sql`
      CREATE OR REPLACE TABLE orders AS
        SELECT i AS row_id, 'o-' || i AS order_id, 'c-' || (i % 3) AS contact_id, TIMESTAMP '2024-03-01' + to_hours(i * 7) AS datetime,
               CASE WHEN i % 2 = 0 THEN 'EUR' ELSE 'CZK' END AS currency, CAST(10.5 + i AS DECIMAL(18,4)) AS amount_wo_tax,
               CAST(12.25 + i AS DECIMAL(18,4)) AS amount_w_tax, 'CZ' AS country, i % 5 = 4 AS is_refund, 'completed' AS status
        FROM range(40) t(i)`);
    await db.exec(sql`
      CREATE OR REPLACE TABLE touches AS
        SELECT 'c-' || (i % 3) AS contact_id, TIMESTAMP '2024-02-20' + to_hours(i * 5) AS datetime, 'click' AS touch,
               'campaign' AS source_type, 'k-' || (i % 4) AS source_id
        FROM range(60) t(i)`);
    const period = { dateFrom: '2024-03-01', dateTo: '2024-03-10' };
    const columns = async () => (await db.all<{ column_name: string }>(sql`DESCRIBE conv`)).map((c) => c.column_name);
    const figures = join(FIGURE_COLUMNS.map((c) => ident(c)));
    await materialise({ ...bare(), period }, ATTRIBUTION);
    const all = await columns();
    expect(all).toEqual(expect.arrayContaining([...FIGURE_COLUMNS, 'order_id', 'name', 'campaign_id', 'first_name', 'country', 'centi_hours']));
    await db.exec(sql`CREATE OR REPLACE TABLE conv_records AS SELECT ${figures} FROM conv`);
    await db.exec(sql`DROP TABLE conv`);
    await materialise({ ...bare(), period }, FIGURES_ATTRIBUTION);
    expect(await columns()).toEqual(all.filter((c) => FIGURE_COLUMNS.includes(c)));
    expect(FIGURE_COLUMNS).toEqual(['contact_id', 'datetime', 'is_refund', 'currency', 'amount_wo_tax', 'amount_w_tax', 'day', 'fx_date', 'ref_wo', 'ref_w', 'source_type', 'source_id']);
    const rows = await db.all<{ n: bigint }>(sql`SELECT count(*) AS n FROM conv`);
    expect(Number(rows[0]!.n)).toBeGreaterThan(10);
    const differ = await db.all(sql`(SELECT * FROM conv EXCEPT ALL SELECT * FROM conv_records) UNION ALL (SELECT * FROM conv_records EXCEPT ALL SELECT * FROM conv)`);
    expect(differ).toEqual([]);
    await db.exec(sql`DROP TABLE conv; DROP TABLE conv_records; DROP TABLE source_info; DROP TABLE attr; DROP TABLE orders; DROP TABLE touches`);
  });

  it('a backend that attributed a period for figures attributes it again for records: items and a report filtered by country answer as a fresh backend does', async () => {
    const dir = shop({
      orders: [
        { id: 'o-1', contact: 'c1', at: '2024-03-02T10:00:00Z', country: 'CZ', net: 100 },
        { id: 'o-2', contact: 'c2', at: '2024-03-05T10:00:00Z', country: 'SK', net: 50 },
        { id: 'o-2', contact: 'c2', at: '2024-03-08T10:00:00Z', country: 'SK', net: 20, refund: true },
      ],
      touches: [
        { contact: 'c1', at: '2024-03-01T10:00:00Z', source: 'k1' },
        { contact: 'c2', at: '2024-03-04T10:00:00Z', source: 'k2' },
      ],
      sources: [['campaign', 'k1', 'Spring sale', 'camp-1', null, null, null, null, '2024-02-01T00:00:00Z'], ['campaign', 'k2', 'Summer', 'camp-2', null, null, null, null, null]],
    });
    const march = reportQuery('2024-03-01', '2024-03-31');
    // records after figures: every item's columns, a report filtered by country (a column of records)
    const asked: ((b: LocalBackend) => Promise<unknown>)[] = [
      (b) => b.items(itemsQuery('2024-03-01', '2024-03-31')),
      (b) => b.report({ ...march, country: ['SK'] }),
      (b) => b.items(itemsQuery('2024-03-03', '2024-03-09')),
      (b) => b.report(march),
    ];
    const fresh: unknown[] = [];
    for (const ask of asked) fresh.push(await withBackend(dir, ask));
    const afterFigures = await withBackend(dir, async (b) => {
      const out: unknown[] = [];
      for (const ask of asked) {
        await b.report(march);
        out.push(await ask(b));
      }
      return out;
    });
    expect(afterFigures).toEqual(fresh);
    await withBackend(dir, async (b) => {
      const convColumns = async () => (await b.scope.db.all<{ column_name: string }>(sql`DESCRIBE SELECT * FROM ${b.scope.relation('conv')}`)).map((c) => c.column_name);
      // a report of the period makes conv of figures; a filter of a records' column, every column
      await b.report(march);
      expect(await convColumns()).toEqual([...FIGURE_COLUMNS]);
      await b.report({ ...march, country: ['SK'] });
      expect(await convColumns()).toEqual(expect.arrayContaining([...FIGURE_COLUMNS, 'order_id', 'name', 'country', 'first_name']));
      // queries of records at once after a report of figures: one attribution at a time, each answered
      await b.report(reportQuery('2024-02-01', '2024-04-30'));
      const [all, sk] = await Promise.all([b.items(itemsQuery('2024-03-01', '2024-03-31')), b.report({ ...march, country: ['SK'] })]);
      expect([all, sk]).toEqual([fresh[0], fresh[1]]);
    });
    const items = fresh[0] as Awaited<ReturnType<LocalBackend['items']>>;
    expect(items.rows.map((r) => [r.orderId, r.source.name, r.country])).toEqual([['o-1', 'Spring sale', 'CZ'], ['o-2', 'Summer', 'SK'], ['o-2', 'Summer', 'SK']]);
    const sk = fresh[1] as Awaited<ReturnType<LocalBackend['report']>>;
    expect(sk.rows.map((r) => [r.name, r.conversionsNumber, r.refundsNumber])).toEqual([['Summer', 1, 1]]);
  });
});
