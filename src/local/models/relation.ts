/**
 * The attribution as named relations: each says what it holds and what it reads,
 * and gives its SELECT; `materialise` creates them in order in a scope's schema.
 * The relations themselves live beside this file (attribution.ts, daily.ts).
 */
import { timed } from '../../timings.js';
import type { Database } from '../db.js';
import { ident, join, literal, sql, trusted, type Sql } from '../sql.js';
import { columnSqlType, TABLES, type TableName } from '../schema.js';

/** Inclusive UTC calendar days, YYYY-MM-DD. */
export interface Period {
  dateFrom: string;
  dateTo: string;
}

/** What a relation is built from: the scope it lies in and the period attributed (none: every transaction). */
export interface ModelInput {
  readonly db: Database;
  /** The scope's DuckDB schema. */
  readonly schema: string;
  readonly referenceCurrency: string;
  /** A relation of the scope by name: a dataset table narrowed to the plugin, or one of the relations made before. */
  relation(name: string): Sql;
  /** True when the dataset holds the table. */
  has(table: TableName): boolean;
  /** The period whose transactions are attributed; undefined for every transaction. */
  readonly period?: Period;
}

/** A named relation of the attribution. */
export interface Relation {
  /** Its name in the scope's schema. */
  readonly name: string;
  /** What a row of it is. */
  readonly holds: string;
  /** The relations it reads: the dataset's tables (narrowed to the plugin) and relations made before it. */
  readonly reads: readonly string[];
  /** A view where reading through is cheaper than a copy (default: a table, replaced when made again). */
  readonly kind?: 'VIEW';
  /** Read only by the relations made after it in the same run: dropped once they are, so that its memory serves the queries. */
  readonly transient?: boolean;
  /** Its rows (a relation that looks at the data before it is built, such as clicks, is asynchronous). */
  select(input: ModelInput): Sql | Promise<Sql>;
  /** A step once it is made (filling in what only some rows need). */
  complete?(input: ModelInput): Promise<void>;
}

/** The dataset's tables a relation may read (each through the scope's view narrowed to the plugin). */
const INPUTS: readonly string[] = ['orders', 'touches', 'sources', 'fx', 'contacts'];

/**
 * Creates the relations in order, each as a table (or a view, where its kind says) of the
 * scope's schema. A relation may read only the dataset's tables and the relations before it.
 * A transient one is dropped as soon as no relation after it reads it (the last made first).
 */
export async function materialise(input: ModelInput, relations: readonly Relation[]): Promise<void> {
  const made = new Set(INPUTS);
  const transient: Relation[] = [];
  for (const [i, relation] of relations.entries()) {
    const unknown = relation.reads.filter((name) => !made.has(name));
    if (unknown.length) throw new Error(`internal: ${relation.name} reads ${unknown.join(', ')} before it is made`);
    await timed(`make ${relation.name}`, async () => {
      const select = await relation.select(input);
      await input.db.exec(sql`
      CREATE OR REPLACE ${trusted(relation.kind ?? 'TABLE')} ${input.relation(relation.name)} AS ${select}`);
      await relation.complete?.(input);
    });
    made.add(relation.name);
    if (relation.transient) transient.unshift(relation);
    const later = relations.slice(i + 1);
    for (const done of transient.filter((t) => !later.some((r) => r.reads.includes(t.name)))) {
      await input.db.exec(sql`DROP ${trusted(done.kind ?? 'TABLE')} ${input.relation(done.name)}`);
      transient.splice(transient.indexOf(done), 1);
    }
  }
}

/** A period as SQL bounds on a datetime: [lo, hi), constants so that Parquet statistics and hive partitions prune. */
export function bounds(period: Period): { lo: Sql; hi: Sql } {
  for (const day of [period.dateFrom, period.dateTo]) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new Error(`internal: bad period day ${JSON.stringify(day)}`);
  }
  return {
    lo: sql`CAST(DATE ${literal(period.dateFrom)} AS TIMESTAMP)`,
    hi: sql`CAST(DATE ${literal(period.dateTo)} + INTERVAL 1 DAY AS TIMESTAMP)`,
  };
}

/** The condition that a datetime column lies in the input's period (true without one). */
export function inPeriod(input: ModelInput, column: Sql): Sql {
  if (!input.period) return sql`true`;
  const { lo, hi } = bounds(input.period);
  return sql`${column} >= ${lo} AND ${column} < ${hi}`;
}

/**
 * A dataset table that may be missing: the relation over it, or, without it, an empty relation
 * of the same columns (those named, else every column of schema.ts), typed as schema.ts types them.
 */
export function optional(input: ModelInput, table: TableName, columns: readonly string[] | undefined, present: () => Sql): Sql {
  if (input.has(table)) return present();
  const names = columns ?? TABLES[table].columns.map((c) => c.name);
  const nulls = names.map((name) => sql`NULL::${trusted(columnSqlType(table, name))} AS ${ident(name)}`);
  return sql`(SELECT ${join(nulls)} WHERE false)`;
}
