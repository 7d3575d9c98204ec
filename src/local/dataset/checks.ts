/**
 * The problems of a loaded table: required columns missing, required values empty, nested
 * values, values that are not of the column's type (values.ts). Counted in one pass (one count
 * per check under WHERE for Parquet); only a check that found something reads its first
 * examples and their lines.
 */
import { plural } from '../../words.js';
import { QueryTimeoutError, type Database, type Row } from '../db.js';
import { TABLES, TYPE_DESCRIPTIONS, type ColumnSpec } from '../schema.js';
import { ident, join, sql, type Sql } from '../sql.js';
import { lineLabels, locationKey } from './labels.js';
import { describeValue, fileLabel, firstLine } from './problems.js';
import { positioned, rawTable } from './reader.js';
import type { FileProblem, LoadedTable, SourceColumn } from './types.js';
import { nestedCondition, rawValue, typeCheck } from './values.js';

interface Check {
  /** The column as the file names it. */
  column: string;
  /** The value an example shows. */
  value: Sql;
  /** True for a row with the problem. */
  condition: Sql;
  /** The same count as disjoint parts whose plain comparisons Parquet statistics can answer (see countChecks). */
  counts?: Sql[];
  message: (value: unknown) => string;
}

/** The value checks of one column found in the file. */
function columnChecks(found: SourceColumn, spec: ColumnSpec): Check[] {
  const checks: Check[] = [];
  const v = rawValue(found);
  if (spec.required) {
    const text = found.rawType === 'VARCHAR';
    checks.push({
      column: found.name,
      value: v,
      // Only text can be blank; casting typed Parquet columns to text would cost a scan's worth of strings.
      condition: text ? sql`${v} IS NULL OR trim(${v}) = ''` : sql`${v} IS NULL`,
      // trim() strips spaces only, so a blank text sorts before '!': a bound that min/max statistics can refute.
      counts: text ? [sql`${v} IS NULL`, sql`${v} < '!' AND trim(${v}) = ''`] : [sql`${v} IS NULL`],
      message: () => 'the value is empty, and the column is required',
    });
  }
  const nested = nestedCondition(found);
  if (nested) {
    checks.push({
      column: found.name,
      value: sql`CAST(${ident(found.name)} AS VARCHAR)`,
      condition: nested,
      message: (value) => `${describeValue(value)} is a nested value (an object or a list), not ${TYPE_DESCRIPTIONS[spec.type]}`,
    });
  }
  const typed = typeCheck(spec, found);
  if (typed) checks.push({ column: found.name, ...typed });
  return checks;
}

/**
 * How many rows each check finds, as <prefix>0, <prefix>1…. Parquet: each check its own count under
 * WHERE, so that the scan takes the filter and skips every row group whose statistics (null counts,
 * min/max) rule it out: clean typed files are barely read. Text tables are in memory: one pass with
 * every check.
 */
function countChecks(loaded: LoadedTable, checks: Check[], prefix = 'c'): Sql {
  const raw = rawTable(loaded.source.table);
  const name = (i: number) => ident(`${prefix}${i}`);
  if (loaded.source.format === 'parquet') {
    const counts = checks.map((c, i) => {
      const parts = (c.counts ?? [c.condition]).map((w) => sql`(SELECT count(*) FROM ${raw} WHERE ${w})`);
      return sql`${join(parts, sql` + `)} AS ${name(i)}`;
    });
    return sql`SELECT ${join(counts)}`;
  }
  return sql`SELECT ${join(checks.map((c, i) => sql`count(*) FILTER (WHERE ${c.condition}) AS ${name(i)}`))} FROM ${raw}`;
}

/** A table's checks, and the problems found without reading a row (a required column missing). */
interface TableChecks {
  loaded: LoadedTable;
  checks: Check[];
  missing: FileProblem[];
}

/**
 * plugin_id where a table carries it (docs/datasets.md, Plugins): required in every row, as in
 * plugins. An empty one names no plugin, and no plugin's scope would read the row; a table shared
 * by every plugin is one without the column.
 */
const PLUGIN_ID: ColumnSpec = { name: 'plugin_id', type: 'string', required: true };

function checksOf(loaded: LoadedTable): TableChecks {
  const { source, columns } = loaded;
  const missing: FileProblem[] = [];
  const checks: Check[] = [];
  const pluginId = columns.get(PLUGIN_ID.name);
  if (pluginId && !TABLES[source.table].columns.some((c) => c.name === PLUGIN_ID.name)) checks.push(...columnChecks(pluginId, PLUGIN_ID));
  for (const col of TABLES[source.table].columns) {
    const found = columns.get(col.name);
    if (found) checks.push(...columnChecks(found, col));
    else if (col.required) {
      missing.push({
        table: source.table,
        file: source.display,
        column: col.name,
        message: `required column is missing (columns found: ${[...columns.values()].map((c) => c.name).join(', ') || 'none'})`,
      });
    }
  }
  return { loaded, checks, missing };
}

/**
 * Every problem of the loaded tables, in their order (a table with duplicate columns: those
 * alone). The checks of every table are counted in one statement; only when it fails is each
 * table counted alone, so that the one that cannot be read is named.
 */
export async function tablesProblems(db: Database, dir: string, tables: readonly LoadedTable[]): Promise<FileProblem[]> {
  const all = tables.map((loaded) => (loaded.duplicates?.length ? undefined : checksOf(loaded)));
  const counted = all.flatMap((t, j) => (t?.checks.length ? [{ t, j }] : []));
  let merged: Row | undefined;
  // A budget that ran out fails the first table's count, as counting each alone would have.
  let timedOut: string | undefined;
  if (counted.length > 1) {
    const parts = counted.map(({ t, j }) => sql`(${countChecks(t.loaded, t.checks, `t${j}_c`)})`);
    // One row each, side by side: a positional join is a cross join of one-row parts that the join-order optimizer leaves alone.
    merged = await db.one(sql`SELECT * FROM ${join(parts, sql` POSITIONAL JOIN `)}`).catch((error: unknown) => {
      if (error instanceof QueryTimeoutError) timedOut = firstLine(error);
      return undefined;
    });
  }
  const problems: FileProblem[] = [];
  for (const [j, loaded] of tables.entries()) {
    const t = all[j];
    if (!t) {
      problems.push(...loaded.duplicates!);
      continue;
    }
    problems.push(...t.missing);
    if (t.checks.length === 0) continue;
    const first = timedOut !== undefined && j === counted[0]!.j;
    const count = merged ? t.checks.map((_, i) => Number(merged![`t${j}_c${i}`] ?? 0)) : first ? timedOut! : await countAlone(db, t);
    if (typeof count === 'string') {
      problems.push({ table: loaded.source.table, file: loaded.source.display, message: `cannot read the file: ${count}` });
      continue;
    }
    problems.push(...(await checkProblems(db, dir, loaded, t.checks, count)));
  }
  return problems;
}

/** One table's counts of its checks, or the first line of why they cannot be counted. */
async function countAlone(db: Database, { loaded, checks }: TableChecks): Promise<number[] | string> {
  try {
    const counts = await db.one(countChecks(loaded, checks));
    return checks.map((_, i) => Number(counts?.[`c${i}`] ?? 0));
  } catch (error) {
    return firstLine(error);
  }
}

/** The problems of the checks that found some: the first few rows in file order, by their lines, and how many more. */
async function checkProblems(db: Database, dir: string, loaded: LoadedTable, checks: Check[], count: number[]): Promise<FileProblem[]> {
  const { source } = loaded;
  // Only now, with something to show, the examples: the first few in file order, then their lines.
  const examples = new Map<number, Row[]>();
  for (const [i, check] of checks.entries()) {
    if (count[i] === 0) continue;
    examples.set(
      i,
      await db.all(sql`SELECT __file, __pos, ${check.value} AS v FROM ${positioned(loaded)} WHERE ${check.condition} ORDER BY __file, __pos LIMIT 3`),
    );
  }
  const located = [...examples.values()].flat().map((r) => ({ file: String(r.__file), position: Number(r.__pos) }));
  const labels = await lineLabels(db, loaded, located);
  const problems: FileProblem[] = [];
  for (const [i, check] of checks.entries()) {
    const rows = examples.get(i);
    if (!rows) continue;
    for (const example of rows) {
      const file = String(example.__file);
      const line = labels.get(locationKey(file, Number(example.__pos)));
      problems.push({
        table: source.table,
        file: fileLabel(dir, source, file),
        ...(line ? { line } : {}),
        column: check.column,
        message: check.message(example.v),
      });
    }
    const more = count[i]! - rows.length;
    if (more > 0) {
      problems.push({ table: source.table, file: source.display, column: check.column, message: `${plural(more, 'more row has', 'more rows have')} this problem` });
    }
  }
  return problems;
}
