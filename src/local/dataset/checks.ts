/**
 * The problems of a loaded table: required columns missing, required values empty, nested
 * values, values that are not of the column's type (values.ts). Counted in one pass (one count
 * per check under WHERE for Parquet); only a check that found something reads its first
 * examples and their lines.
 */
import { plural } from '../../words.js';
import type { Database, Row } from '../db.js';
import { TABLES, TYPE_DESCRIPTIONS, type ColumnSpec } from '../schema.js';
import { ident, int, join, sql, type Sql } from '../sql.js';
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
  if (typed) checks.push({ column: found.name, value: v, ...typed });
  return checks;
}

/**
 * How many rows each check finds, as c0, c1…. Parquet: each check its own count under WHERE, so
 * that the scan takes the filter and skips every row group whose statistics (null counts, min/max)
 * rule it out: clean typed files are barely read. Text tables are in memory: one pass with every check.
 */
function countChecks(loaded: LoadedTable, checks: Check[]): Sql {
  const raw = rawTable(loaded.source.table);
  if (loaded.source.format === 'parquet') {
    const counts = checks.map((c, i) => {
      const parts = (c.counts ?? [c.condition]).map((w) => sql`(SELECT count(*) FROM ${raw} WHERE ${w})`);
      return sql`${join(parts, sql` + `)} AS c${int(i)}`;
    });
    return sql`SELECT ${join(counts)}`;
  }
  return sql`SELECT ${join(checks.map((c, i) => sql`count(*) FILTER (WHERE ${c.condition}) AS c${int(i)}`))} FROM ${raw}`;
}

/** Every problem of a loaded table (its duplicate columns alone, when it has any). */
export async function tableProblems(db: Database, dir: string, loaded: LoadedTable): Promise<FileProblem[]> {
  const { source, columns } = loaded;
  if (loaded.duplicates?.length) return loaded.duplicates;
  const problems: FileProblem[] = [];
  const checks: Check[] = [];
  for (const col of TABLES[source.table].columns) {
    const found = columns.get(col.name);
    if (found) checks.push(...columnChecks(found, col));
    else if (col.required) {
      problems.push({
        table: source.table,
        file: source.display,
        column: col.name,
        message: `required column is missing (columns found: ${[...columns.values()].map((c) => c.name).join(', ') || 'none'})`,
      });
    }
  }
  if (checks.length === 0) return problems;
  let counts: Row | undefined;
  try {
    counts = await db.one(countChecks(loaded, checks));
  } catch (error) {
    problems.push({ table: source.table, file: source.display, message: `cannot read the file: ${firstLine(error)}` });
    return problems;
  }
  const count = checks.map((_, i) => Number(counts?.[`c${i}`] ?? 0));
  problems.push(...(await checkProblems(db, dir, loaded, checks, count)));
  return problems;
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
