/**
 * A dataset read into DuckDB (docs/datasets.md), its work done by the modules of
 * dataset/: finding the tables on disk (discover.ts), reading them as they are (load.ts, reader.ts, plain.ts,
 * and where and why the reader failed: unreadable.ts, duplicates.ts), checking every value against
 * its column's type (checks.ts, with the table of column types in values.ts), saying where a
 * record lies (labels.ts), and the typed tables (typing.ts).
 */
import { DataError } from '../errors.js';
import type { Database } from './db.js';
import { discoverTables } from './dataset/discover.js';
import { tablesProblems } from './dataset/checks.js';
import { loadTable } from './dataset/load.js';
import { formatFileProblem, UnreadableTableError } from './dataset/problems.js';
import { createTypedTable } from './dataset/typing.js';
import type { DataIssue, FileProblem, LoadedTable, TableSource } from './dataset/types.js';
import type { TableName } from './schema.js';
import { pathWord } from '../words.js';

export type { DataIssue, FileProblem, LoadedTable, SourceColumn, TableSource } from './dataset/types.js';
export { discoverTables } from './dataset/discover.js';
export { readExpression } from './dataset/reader.js';
export { firstLine, formatFileProblem } from './dataset/problems.js';

/** How messages name a dataset: the path as the user gave it (`--data shop`), where convx reads it by its absolute path. */
export interface Named {
  name?: string | undefined;
}

/**
 * A dataset read into DuckDB: raw views over the files, then typed tables
 * t_<name> with plugin_id (NULL where the file has none).
 */
export class Dataset {
  readonly tables = new Map<TableName, LoadedTable>();
  /** Findings about the data that are not errors, known once createTypedTables() has run. */
  readonly findings: DataIssue[] = [];
  /**
   * A convx .duckdb file written by `convx data import` (imported.ts): its typed tables were
   * checked when imported, so there is nothing to check or type again.
   */
  imported = false;

  /**
   * dir: where the dataset is (a folder, or an imported file); name: how messages name it, the
   * path as the user gave it (`--data shop`, not the absolute path convx reads it by).
   */
  private constructor(
    readonly dir: string,
    readonly db: Database,
    readonly name: string,
  ) {}

  /** A dataset whose typed tables t_<name> already exist (an imported file): no files to read or check. */
  static typed(dir: string, db: Database, tables: Iterable<[TableName, LoadedTable]>, findings: DataIssue[], name = dir): Dataset {
    const dataset = new Dataset(dir, db, name);
    for (const [name, loaded] of tables) dataset.tables.set(name, loaded);
    dataset.findings.push(...findings);
    dataset.imported = true;
    return dataset;
  }

  /**
   * Tables the reader could not read, by where and why (collect mode, for `convx data check`):
   * listed by problems() first; the table itself is not loaded.
   */
  readonly unreadable: FileProblem[] = [];

  /**
   * Reads a directory's tables. A table the reader cannot read is a DataError naming where and
   * why; with `collect` (data check), its problems are kept in `unreadable` and the rest is read.
   * `sources`: the tables to read instead of all those found at dir (`data import --append`: its new files).
   */
  static async open(dir: string, db: Database, options: { collect?: boolean; sources?: Map<TableName, TableSource>; name?: string } = {}): Promise<Dataset> {
    const dataset = new Dataset(dir, db, options.name ?? dir);
    for (const [name, source] of options.sources ?? discoverTables(dir, dataset.name)) {
      try {
        dataset.tables.set(name, await loadTable(db, dir, source));
      } catch (error) {
        if (!options.collect || !(error instanceof UnreadableTableError)) throw error;
        dataset.unreadable.push(...error.problems);
      }
    }
    return dataset;
  }

  has(table: TableName): boolean {
    return this.tables.has(table);
  }

  /** The findings as one line each, for a warning on stderr. */
  warnings(): string[] {
    return this.findings.map(
      (f) => `${f.message}: ${f.examples.join('; ')}${f.count > f.examples.length ? `; … (run \`convx data check ${pathWord(this.name)}\` for more)` : ''}`,
    );
  }

  /** Every problem of every loaded table: missing columns, values of the wrong type, empty required values. */
  async problems(): Promise<FileProblem[]> {
    const problems: FileProblem[] = [...this.unreadable];
    if (this.imported) return problems;
    problems.push(...(await tablesProblems(this.db, this.dir, [...this.tables.values()])));
    return problems;
  }

  /** Raises a DataError naming every problem, if there is any. */
  async validate(): Promise<void> {
    const problems = await this.problems();
    if (problems.length) {
      throw new DataError(
        `the dataset at ${this.name} has ${problems.length} problem${problems.length > 1 ? 's' : ''} (run \`convx data check ${pathWord(this.name)}\` for integrity findings too):`,
        problems.map(formatFileProblem),
      );
    }
  }

  /**
   * Creates t_<name> for each table (typed columns, plugin_id, a row id in file order) and drops the raw copy;
   * notes the findings (negative orders) on the way. `inPlace`: tables a single Parquet file may serve as a view.
   */
  async createTypedTables(options: { materialise?: boolean; inPlace?: readonly TableName[] } = {}): Promise<void> {
    if (this.imported) return;
    this.findings.length = 0;
    for (const loaded of this.tables.values()) {
      const inPlace = options.inPlace?.includes(loaded.source.table) === true;
      const finding = await createTypedTable(this.db, this.dir, loaded, options.materialise === true, inPlace);
      if (finding) this.findings.push(finding);
    }
  }
}
