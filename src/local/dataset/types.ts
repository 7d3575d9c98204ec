/** What a dataset's tables are while they are read, checked and typed (dataset.ts and the modules of this folder). */
import type { TableName } from '../schema.js';

export type FileFormat = 'csv' | 'parquet' | 'json';

export interface TableSource {
  table: TableName;
  /** A file path, or globs over a folder of files. */
  patterns: string[];
  /** How the table is named in messages: a path relative to the dataset. */
  display: string;
  /** The files themselves, in name order. */
  files: string[];
  format: FileFormat;
  /** JSON arrays have no line numbers; JSON Lines and CSV do. */
  jsonLines: boolean;
  hive: boolean;
  multiFile: boolean;
}

export interface SourceColumn {
  /** The name as it stands in the file. */
  name: string;
  /** DuckDB's type of the raw column (VARCHAR for CSV). */
  rawType: string;
}

export interface LoadedTable {
  source: TableSource;
  /** Raw columns by lower-cased name. */
  columns: Map<string, SourceColumn>;
  hasPluginId: boolean;
  /** Columns named twice (also in another case): the table's only problems, since which one counts is unclear. */
  duplicates?: FileProblem[];
}

/**
 * Something in the data that is not an error but deserves a look: found while typing the tables
 * (negative_amount) or by `convx data check` across tables (the rest). Not a delivery validation
 * Finding (model/validation.ts), which is about an e-mail.
 */
export interface DataIssue {
  code:
    | 'missing_table'
    | 'duplicate_order'
    | 'duplicate_contact'
    | 'refund_without_order'
    | 'refund_before_order'
    | 'negative_amount'
    | 'unknown_source'
    | 'currency_without_fx'
    | 'fx_gap'
    | 'fx_duplicate';
  message: string;
  count: number;
  /** Which and where, e.g. "order o7 (orders.csv, line 5)"; the first few in file order. */
  examples: string[];
}

export interface FileProblem {
  table: TableName;
  file: string;
  column?: string;
  line?: string;
  message: string;
}

/** A record as DuckDB read it: its file and its 0-based position in the table (rowid) or the file (Parquet). */
export interface Located {
  file: string;
  position: number;
}
