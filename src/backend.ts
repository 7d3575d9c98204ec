import type { ValidateResponse } from './model/validation.js';
import type { RenderLimits } from './validation/limits.js';
import type {
  AggregateRow,
  ConversionRecord,
  ItemsQuery,
  Page,
  ReportQuery,
} from './model/types.js';

export interface RowStream<T> {
  /** All matches of the query, as paging.totalCount reports it. */
  totalCount: number;
  rows: AsyncIterable<T>;
  /**
   * The same rows already written as csv or tsv lines by the engine (local mode),
   * byte for byte what the formatters would write for `columns`; undefined when
   * the backend cannot (an unknown column, a value it cannot write exactly).
   * Using it, rows is never read.
   */
  text?: (request: TextRequest) => Promise<AsyncIterable<TextChunk> | undefined>;
}

export interface TextRequest {
  /** jsonl: whole records (no --fields). */
  format: 'csv' | 'tsv' | 'jsonl';
  /** Flat (dotted) columns, in order. */
  columns: string[];
  formulaEscape: boolean;
}

/** Some lines of output, each ending in a newline, and how many records they hold. */
export interface TextChunk {
  text: string;
  rows: number;
}

/** Why an order is, or is not, a conversion (the `order` command's explanation). */
export interface OrderDiagnosis {
  orderId: string;
  found: boolean;
  /** Present for an order that exists but is not a conversion. */
  reasons: string[];
}

/**
 * One interface, two implementations (DESIGN.md section 2). Both return the
 * interface's JSON shapes; neither prints anything.
 */
export interface Backend {
  report(query: ReportQuery): Promise<Page<AggregateRow>>;
  items(query: ItemsQuery): Promise<Page<ConversionRecord>>;
  /** Every row from query.offset on, in sort order, streamed (query.limit does not apply). */
  allReport(query: ReportQuery): Promise<RowStream<AggregateRow>>;
  allItems(query: ItemsQuery): Promise<RowStream<ConversionRecord>>;
  /**
   * The dry run of an e-mail delivery; findings are in the response, never
   * thrown (a request over a size limit is a TooLargeError). renderLimits:
   * local mode only; a server applies its own.
   */
  validateEmail(request: unknown, renderLimits?: RenderLimits): Promise<ValidateResponse>;
  /** Explains an order that the items query did not find; absent where the backend cannot tell. */
  diagnoseOrder?(orderId: string, period?: { dateFrom: string; dateTo: string }): Promise<OrderDiagnosis>;
  close(): Promise<void>;
}
