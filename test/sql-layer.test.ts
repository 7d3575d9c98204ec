import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join as joinPath, relative } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../src/local/db.js';
import { compile, ident, int, join, list, literal, sql, table, trusted } from '../src/local/sql.js';

describe('the sql tagged template (src/local/sql.ts)', () => {
  let db: Database;
  beforeAll(async () => {
    db = await Database.open();
  });
  afterAll(() => db.close());

  it('binds every interpolated value as a parameter, numbered in order through nested fragments', () => {
    const inner = sql`b = ${'x'}`;
    const q = sql`SELECT * FROM t WHERE a = ${1} AND ${inner} AND c IN ${list(['y', 'z'])}`;
    expect(compile(q)).toEqual({
      text: 'SELECT * FROM t WHERE a = $p1 AND b = $p2 AND c IN ($p3, $p4)',
      params: { p1: 1, p2: 'x', p3: 'y', p4: 'z' },
    });
  });

  it('a value that looks like SQL stays a value', async () => {
    const evil = "x'; DROP TABLE t; --";
    const row = await db.one<{ v: string; n: bigint }>(sql`SELECT ${evil} AS v, length(${evil}) AS n`);
    expect(row).toEqual({ v: evil, n: BigInt(evil.length) });
  });

  it('identifiers, tables and literals are quoted; whole numbers checked', async () => {
    expect(compile(sql`SELECT ${ident('we"ird')} FROM ${table('orders')}, ${table('touches', 'imported.main')}`).text).toBe(
      'SELECT "we""ird" FROM "t_orders", imported.main."t_touches"',
    );
    expect(compile(sql`SELECT ${literal("it's")}`).text).toBe("SELECT 'it''s'");
    expect(compile(sql`LIMIT ${int(20)}`).text).toBe('LIMIT 20');
    expect(() => int(1.5)).toThrow(/whole number/);
    expect(() => int(Number.NaN)).toThrow(/whole number/);
    const row = await db.one<{ s: string }>(sql`SELECT ${literal("it's")} AS ${ident('s')}`);
    expect(row?.s).toBe("it's");
  });

  it('trusted takes only a string literal type, join joins, an empty list matches nothing', async () => {
    const direction = Math.random() < 2 ? ('DESC' as const) : ('ASC' as const);
    expect(compile(sql`ORDER BY a ${trusted(direction)}`).text).toBe('ORDER BY a DESC');
    const runtime: string = 'DESC';
    // @ts-expect-error a string read at run time is not a trusted fragment
    trusted(runtime);
    expect(compile(join([sql`a = ${1}`, sql`b = ${2}`], trusted(' AND '))).text).toBe('a = $p1 AND b = $p2');
    expect(join([]).empty).toBe(true);
    const rows = await db.all(sql`SELECT 1 AS x WHERE 'a' IN ${list([])}`);
    expect(rows).toEqual([]);
  });
});

describe('no SQL from text', () => {
  const SRC = joinPath(import.meta.dirname, '..', 'src');
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = joinPath(dir, name);
      return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
    });
  const SQL_WORDS = /\b(SELECT|FROM|WHERE|JOIN|CREATE|INSERT|UPDATE|DELETE|ATTACH|DETACH|COPY|PRAGMA|CAST|ORDER BY|GROUP BY|LIMIT|UNION|read_csv|read_json|read_parquet)\b/;

  it('only src/local/sql.ts splices text into SQL: no other module builds SQL in a plain template string or calls Sql.of', () => {
    const found: string[] = [];
    for (const path of files(SRC)) {
      if (path.endsWith(joinPath('local', 'sql.ts'))) continue;
      const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node) => {
        if (ts.isPropertyAccessExpression(node) && node.expression.getText() === 'Sql' && node.name.text === 'of') {
          // Sql.of trusts its text as it is: only sql.ts may call it.
          found.push(`${relative(SRC, path)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: Sql.of`);
        }
        if (ts.isTemplateExpression(node) && !ts.isTaggedTemplateExpression(node.parent)) {
          const text = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(' ');
          if (SQL_WORDS.test(text)) {
            const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
            found.push(`${relative(SRC, path)}:${line}: ${node.getText().slice(0, 80)}`);
          }
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(found).toEqual([]);
  });

  it('Database takes only an Sql', () => {
    // @ts-expect-error a string is not a query
    const typed: Parameters<Database['all']>[0] = 'SELECT 1';
    expect(typed).toBe('SELECT 1');
  });
});
