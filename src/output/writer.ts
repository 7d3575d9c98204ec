/** The one place that prints results: picks columns, applies --fields, and streams. */
import type { ChalkInstance } from 'chalk';
import type { RowStream } from '../backend.js';
import { UsageError } from '../errors.js';
import type { AggregateRow, Page } from '../model/types.js';
import { breakdownRows, isSourceColumn } from './columns.js';
import {
  jsonDocument,
  jsonLine,
  jsonListClose,
  jsonListItem,
  JSON_LIST_OPEN,
  project,
  tsvHeader,
  tsvRow,
} from './format.js';
import type { AnyFormat, WriterFormat } from './formats.js';
import type { Sink } from './sink.js';
import { safeJsonText, safeLines } from './terminal.js';
import { plural, quoted } from '../words.js';

export interface RecordKind {
  /** Every flat column, in order (csv, tsv). */
  columns: string[];
  /** Flat columns --fields may also name that are not printed by default (--breakdown: the source's totals). */
  moreColumns?: string[];
  /** A terminal table of several sources closes with a totals row (default: records with a breakdown, i.e. per-source rows). */
  totals?: boolean;
  /** The default columns of a terminal table. */
  tableColumns: string[];
  /** Names that --fields may also take in json/jsonl (whole nested objects). */
  objectFields: string[];
  /** A terminal table's columns left out first when it does not fit (TableOptions.dropFirst); default: from the right. */
  dropFirst?: readonly string[];
  /** Expands a record into flat rows (--breakdown: one per currency). */
  expand?: (record: unknown) => unknown[];
}

/**
 * --breakdown: one line per source and currency. csv/tsv lines carry the source's own columns
 * (id, name, source.*, sourceStartedAt, referenceCurrency) and the currency's breakdown.*
 * columns, not the source's totals (those are one per source; --fields may still name them).
 * json and jsonl keep the interface's rows, with their breakdown arrays.
 */
export function breakdownKind(kind: RecordKind, breakdownColumns: string[], tableColumns: string[], repeated: (column: string) => boolean = isSourceColumn): RecordKind {
  return {
    ...kind,
    columns: [...kind.columns.filter(repeated), ...breakdownColumns],
    moreColumns: kind.columns.filter((c) => !repeated(c)),
    tableColumns,
    totals: true,
    // a breakdown kind describes report rows only
    expand: (record) => breakdownRows(record as AggregateRow),
  };
}

/** What a terminal table may show beside the records (every other format ignores it). */
export interface TableExtras {
  /** The trend column's values by source key (`campaign:k-1`): see TableOptions.sparklines in table.ts. */
  sparklines?: ReadonlyMap<string, readonly number[]>;
}

export interface WriterOptions {
  format: WriterFormat;
  fields?: string[];
  chalk: ChalkInstance;
  /**
   * csv/tsv: text cells that begin with = + - @ tab or CR get a leading ' (and quotes in csv)
   * so a spreadsheet does not run them as formulas. Default true; --no-formula-escape turns it off.
   */
  formulaEscape?: boolean;
  /**
   * table: the terminal's width. Undefined: the sink's (a terminal's columns, else none);
   * null: none, every column at full width.
   */
  width?: number | null;
  /** table: every column at full width, whatever the terminal (--wide). */
  wide?: boolean;
  /** table: where to say which columns were left out to fit (stderr); without it, a line under the table. */
  notice?: (message: string) => void;
  /**
   * stdout is a terminal: the text of a machine format (json, jsonl, csv, tsv, validate's
   * github and junit) is defused there (terminal.ts: json losslessly, the others with the
   * tables' replacement); elsewhere it is the exact data. Tables and cards are safe anyway.
   */
  terminal?: boolean;
}

/** UTF-8 bytes as text (as they are: a leading U+FEFF kept, unlike TextDecoder's default). */
const utf8 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');

export class ResultWriter {
  /** The sink, with machine text defused on a terminal (for the formats other than table). */
  private readonly out: Sink;

  constructor(
    private readonly sink: Sink,
    private readonly options: WriterOptions,
  ) {
    const defuse = options.terminal && options.format !== 'table' && options.format !== 'markdown' ? defuser(options.format) : undefined;
    this.out = defuse ? { write: (text) => sink.write(defuse(typeof text === 'string' ? text : utf8(text))), flush: () => sink.flush() } : sink;
  }

  get format(): WriterFormat {
    return this.options.format;
  }

  private columns(kind: RecordKind): string[] {
    const { fields, format } = this.options;
    if (!fields) return format === 'table' || format === 'markdown' ? kind.tableColumns : kind.columns;
    const flatColumns = [...kind.columns, ...(kind.moreColumns ?? [])];
    const allowed = format === 'json' || format === 'jsonl' ? [...flatColumns, ...kind.objectFields] : flatColumns;
    const unknown = fields.filter((f) => !allowed.includes(f));
    if (unknown.length) {
      throw new UsageError(`--fields: unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map(quoted).join(', ')}; fields: ${allowed.join(', ')}`);
    }
    return fields;
  }

  private shape(record: unknown, columns: string[]): unknown {
    return this.options.fields ? project(record, columns) : record;
  }

  /** Checks --fields before any work is done, so a typo fails fast. */
  check(kind: RecordKind): void {
    this.columns(kind);
  }

  /**
   * The width a terminal table is fitted to: undefined when the format is not a table, with
   * --wide, or off a terminal. Data only a fitted table shows (TableExtras) is worth fetching
   * only when this is defined.
   */
  tableWidth(): number | undefined {
    if (this.options.format !== 'table' || this.options.wide) return undefined;
    return this.options.width === undefined ? this.sink.columns?.() : (this.options.width ?? undefined);
  }

  async page<T>(kind: RecordKind, page: Page<T>, extras?: TableExtras): Promise<void> {
    const { totalCount, dataVersion } = page.paging;
    const stream = { totalCount, ...(dataVersion !== undefined ? { dataVersion } : {}), rows: toAsync(page.rows) };
    await this.stream(kind, stream, page.paging.start, undefined, extras);
  }

  /**
   * Writes every row of a stream; json becomes one document whose paging counts what was written.
   * `progress` hears of every PROGRESS_EVERY rows.
   */
  async stream<T>(
    kind: RecordKind,
    stream: RowStream<T>,
    start: number,
    progress?: (written: number, total: number) => void,
    extras?: TableExtras,
  ): Promise<number> {
    try {
      return await this.writeStream(kind, stream, start, progress, extras);
    } catch (error) {
      // A stream that fails midway (the data changed while paging, a lost connection): the
      // whole records written before the failure are printed, not cut at a buffer's edge.
      await this.sink.flush().catch(() => undefined);
      throw error;
    }
  }

  private async writeStream<T>(
    kind: RecordKind,
    stream: RowStream<T>,
    start: number,
    progress?: (written: number, total: number) => void,
    extras?: TableExtras,
  ): Promise<number> {
    const columns = this.columns(kind);
    const written = await this.writeEngineText(kind, stream, columns, progress);
    if (written !== undefined) return written;
    const rows = progress ? withProgress(stream.rows, (n) => progress(n, stream.totalCount)) : stream.rows;
    const count =
      this.options.format === 'table'
        ? await this.writeTable(kind, rows, columns, { start, totalCount: stream.totalCount, ...extras })
        : this.options.format === 'markdown'
          ? await this.writeMarkdown(kind, rows, columns, { start, totalCount: stream.totalCount })
          : await this.writeRecords(kind, stream, rows, columns, start);
    await this.sink.flush();
    return count;
  }

  /**
   * csv, tsv and whole jsonl records as the engine writes them (byte for byte what the formatters
   * write: no object per row); undefined where it cannot, and the records are written instead.
   */
  private async writeEngineText<T>(
    kind: RecordKind,
    stream: RowStream<T>,
    columns: string[],
    progress?: (written: number, total: number) => void,
  ): Promise<number | undefined> {
    const { format } = this.options;
    const engineText = format === 'csv' || format === 'tsv' || (format === 'jsonl' && !this.options.fields);
    if (!engineText || kind.expand || !stream.text) return undefined;
    const chunks = await stream.text({ format, columns, formulaEscape: this.options.formulaEscape ?? true });
    if (!chunks) return undefined;
    if (format === 'csv') await this.out.write((await import('./csv.js')).csvHeader(columns));
    if (format === 'tsv') await this.out.write(tsvHeader(columns));
    let count = 0;
    for await (const chunk of chunks) {
      await this.out.write(chunk.text);
      const before = count;
      count += chunk.rows;
      if (progress && Math.floor(count / PROGRESS_EVERY) > Math.floor(before / PROGRESS_EVERY)) {
        progress(count - (count % PROGRESS_EVERY), stream.totalCount);
      }
    }
    await this.sink.flush();
    return count;
  }

  /** The records of a machine format (json, jsonl, csv, tsv); returns how many. */
  private async writeRecords<T>(kind: RecordKind, stream: RowStream<T>, rows: AsyncIterable<T>, columns: string[], start: number): Promise<number> {
    const flat = (record: unknown) => (kind.expand ? kind.expand(record) : [record]);
    const formulaEscape = this.options.formulaEscape ?? true;
    let count = 0;
    switch (this.options.format) {
      case 'json': {
        await this.out.write(JSON_LIST_OPEN);
        for await (const record of rows) {
          await this.out.write(jsonListItem(this.shape(record, columns), count === 0));
          count++;
        }
        const version = stream.dataVersion !== undefined ? { dataVersion: stream.dataVersion } : {};
        await this.out.write(jsonListClose({ start, count, totalCount: stream.totalCount, ...version }, count === 0));
        break;
      }
      case 'jsonl':
        for await (const record of rows) {
          await this.out.write(jsonLine(this.shape(record, columns)));
          count++;
        }
        break;
      case 'csv': {
        const { csvHeader, csvRows } = await import('./csv.js');
        await this.out.write(csvHeader(columns));
        let batch: unknown[] = [];
        for await (const record of rows) {
          batch.push(...flat(record));
          count++;
          if (batch.length >= CSV_BATCH) {
            await this.out.write(csvRows(batch, columns, formulaEscape));
            batch = [];
          }
        }
        if (batch.length) await this.out.write(csvRows(batch, columns, formulaEscape));
        break;
      }
      case 'tsv': {
        await this.out.write(tsvHeader(columns));
        for await (const record of rows) {
          for (const line of flat(record)) await this.out.write(tsvRow(line, columns, formulaEscape));
          count++;
        }
        break;
      }
    }
    return count;
  }

  /** A terminal table of every record, then a note of the columns left out to fit; returns how many records. */
  private async writeTable<T>(
    kind: RecordKind,
    rows: AsyncIterable<T>,
    columns: string[],
    { start, totalCount, sparklines }: TableExtras & { start: number; totalCount: number },
  ): Promise<number> {
    const { layoutTable } = await import('./table.js');
    const { lines, count, totals } = await tableLines(kind, rows, start, totalCount);
    if (!lines.length) return count;
    const width = this.tableWidth();
    const layout = layoutTable(lines, columns, this.options.chalk, {
      ...(width !== undefined ? { width } : {}),
      ...(sparklines && !this.options.fields ? { sparklines } : {}),
      ...(kind.dropFirst ? { dropFirst: kind.dropFirst } : {}),
      ...totals,
    });
    await this.sink.write(layout.text);
    if (layout.hidden.length) {
      const message = `${plural(layout.hidden.length, 'column')} left out to fit the terminal (${layout.hidden.join(', ')}); --wide shows every column`;
      // The note follows the table on a terminal: the table is out before the note goes to stderr.
      await this.sink.flush();
      if (this.options.notice) this.options.notice(message);
      else await this.sink.write(`${this.options.chalk.dim(message)}\n`);
    }
    return count;
  }

  /** -o markdown: every record as a row of one GFM table (markdown.ts), with the totals a terminal table has; nothing for none. */
  private async writeMarkdown<T>(kind: RecordKind, rows: AsyncIterable<T>, columns: string[], { start, totalCount }: { start: number; totalCount: number }): Promise<number> {
    const { recordsMarkdown } = await import('./markdown.js');
    const { lines, count, totals } = await tableLines(kind, rows, start, totalCount);
    if (lines.length) await this.sink.write(recordsMarkdown(lines, columns, totals));
    return count;
  }

  /**
   * An answer that holds its records in a list (a series' buckets) or one record (a total): json
   * prints the whole answer, `document` of the records (--fields picks their fields); the other
   * formats print the records as rows (a table, jsonl, csv, tsv).
   */
  async document<T>(kind: RecordKind, records: T[], document: (records: unknown[]) => unknown): Promise<void> {
    if (this.options.format !== 'json') {
      await this.stream(kind, { totalCount: records.length, rows: toAsync(records) }, 0);
      return;
    }
    const columns = this.columns(kind);
    await this.json(document(records.map((record) => this.shape(record, columns))));
  }

  /** Text for a person (a card, a summary), made of values already made safe (terminal.ts), with its colours. */
  async text(text: string): Promise<void> {
    await this.sink.write(text);
    await this.sink.flush();
  }

  /** The text of a machine format (json, github, junit ...): exact, except on a terminal (the `terminal` option). */
  async formatted(text: string, format: AnyFormat): Promise<void> {
    const defuse = this.options.terminal ? defuser(format) : undefined;
    await this.sink.write(defuse ? defuse(text) : text);
    await this.sink.flush();
  }

  async json(value: unknown): Promise<void> {
    const format = this.options.format === 'jsonl' ? 'jsonl' : 'json';
    await this.formatted(format === 'jsonl' ? jsonLine(value) : jsonDocument(value), format);
  }
}

/** How machine text is defused on a terminal: json and jsonl losslessly (the same data), other text as the tables' values; none for a table. */
function defuser(format: AnyFormat): ((text: string) => string) | undefined {
  if (format === 'table') return undefined;
  return format === 'json' || format === 'jsonl' || format === 'sarif' ? safeJsonText : safeLines;
}

/** The lines a table (terminal or markdown) shows of the records (expanded: --breakdown), how many records, and its totals. */
async function tableLines<T>(kind: RecordKind, rows: AsyncIterable<T>, start: number, totalCount: number) {
  const lines: unknown[] = [];
  let count = 0;
  for await (const record of rows) {
    lines.push(...(kind.expand ? kind.expand(record) : [record]));
    count++;
  }
  const shown = start + count;
  const totals = {
    totals: kind.totals ?? kind.objectFields.includes('breakdown'),
    totalLabel: start > 0 || shown < totalCount ? `Total (${start + 1}-${shown} of ${totalCount})` : 'Total',
  };
  return { lines, count, totals };
}

export const PROGRESS_EVERY = 10_000;
/** CSV rows stringified per call. */
const CSV_BATCH = 1000;

async function* withProgress<T>(rows: AsyncIterable<T>, report: (count: number) => void): AsyncGenerator<T> {
  let count = 0;
  for await (const row of rows) {
    yield row;
    if (++count % PROGRESS_EVERY === 0) report(count);
  }
}

async function* toAsync<T>(rows: T[]): AsyncGenerator<T> {
  yield* rows;
}
