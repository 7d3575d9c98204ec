/**
 * The table of column types (src/local/dataset/values.ts): each type's check and its cast are one
 * row, and must agree. Every text value a check accepts casts to the type; the typed column's SQL
 * type is the schema's (schema.ts, SQL_TYPES).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../src/local/db.js';
import { typeCheck, typedValue, VALUE_TYPES } from '../src/local/dataset/values.js';
import { SQL_TYPES, type ColumnType } from '../src/local/schema.js';
import { compile, sql } from '../src/local/sql.js';

/** Raw texts as a CSV file gives them, good and bad for one type or another. */
const SAMPLES = [
  '2024-03-02', '2024-03-02T10:00:00Z', '2024-03-02 10:00:00+02:00', '2024/03/02', 'notatime', '5',
  '0', '1', '-1', '1.5', ' 12.71 ', '1,5', '.5', '1.123456', '1.1234567890', '0.00000000001', '12345678901234567', '99999999999999.9999',
  'true', 'FALSE', ' 1 ', '2', 'maybe', 'campaign', ' Automation ', 'SMARTFLOW', 'campaignx', 'text', 'é',
];
const TYPES = Object.keys(VALUE_TYPES) as ColumnType[];

describe('the column types: one row each, check and cast together', () => {
  let db: Database;
  beforeAll(async () => {
    db = await Database.open();
    await db.exec(sql`CREATE TABLE raw (v VARCHAR)`);
    for (const v of SAMPLES) await db.exec(sql`INSERT INTO raw VALUES (${v})`);
  });
  afterAll(() => db.close());

  it.each(TYPES)('%s: the typed column has the schema type', async (type) => {
    expect(compile(VALUE_TYPES[type].sqlType).text).toBe(SQL_TYPES[type]);
    const row = await db.one<{ t: string }>(sql`SELECT typeof(${typedValue({ name: 'v', type, required: false }, undefined)}) AS t`);
    expect(row?.t).toBe(SQL_TYPES[type]);
  });

  it.each(TYPES)('%s: every text value its check accepts casts to the type, and the cast gives the type', async (type) => {
    const spec = { name: 'v', type, required: true };
    const column = { name: 'v', rawType: 'VARCHAR' };
    const check = typeCheck(spec, column);
    const accepted = sql`SELECT v, ${typedValue(spec, column)} AS typed FROM raw WHERE ${check ? sql`NOT (${check.condition})` : sql`true`}`;
    const rows = await db.all<{ v: string; typed: unknown }>(accepted);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.typed, row.v).not.toBeNull();
    const types = await db.all<{ t: string }>(sql`SELECT DISTINCT typeof(typed) AS t FROM (${accepted})`);
    expect(types.map((t) => t.t)).toEqual([SQL_TYPES[type]]);
  });

  it('a check refuses what its type cannot hold, and says why', async () => {
    const refused = async (type: ColumnType) => {
      const check = typeCheck({ name: 'v', type, required: true }, { name: 'v', rawType: 'VARCHAR' })!;
      const rows = await db.all<{ v: string }>(sql`SELECT v FROM raw WHERE ${check.condition} ORDER BY v`);
      return rows.map((r) => r.v);
    };
    expect(await refused('date')).toContain('2024/03/02');
    expect(await refused('amount')).toEqual(expect.arrayContaining(['1,5', '1.123456', '12345678901234567', 'maybe']));
    expect(await refused('amount')).not.toContain('99999999999999.9999');
    expect(await refused('rate')).toEqual(expect.arrayContaining(['0', '-1', '0.00000000001']));
    expect(await refused('boolean')).toEqual(expect.arrayContaining(['2', 'maybe']));
    expect(await refused('sourceType')).toEqual(expect.arrayContaining(['campaignx', 'text']));
    const amount = typeCheck({ name: 'v', type: 'amount', required: true }, { name: 'v', rawType: 'VARCHAR' })!;
    expect(amount.message('12345678901234567')).toMatch(/is out of range: an amount has at most 14 digits/);
    expect(amount.message('1,5')).toBe('"1,5" is not a decimal number with a dot (at most 4 decimals)');
  });
});
