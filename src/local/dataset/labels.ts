/**
 * Where a record lies, as a message says it: "line N" (CSV, JSON Lines: the physical line,
 * counting the header, blank lines and the lines of values that span several),
 * "row N" (Parquet) or "record N (line L)" (JSON arrays: the place in the array, and the line
 * where the record starts). The files are read again (lines.ts) only for records to show.
 */
import type { Database } from '../db.js';
import { csvRecordLines, jsonRecordLines } from '../lines.js';
import { ident, join, list, literal, sql, type Sql } from '../sql.js';
import { csvDialect, positioned } from './reader.js';
import type { LoadedTable, Located } from './types.js';

/** The key of a record's label in lineLabels' map. */
export const locationKey = (file: string, position: number) => `${file}\n${position}`;

/** Line breaks in a text value as SQL: CRLF, LF and a lone CR count once each. */
const lineBreaks = (v: Sql) => sql`coalesce(len(regexp_extract_all(${v}, '\\r\\n|\\r|\\n')), 0)`;
const countBreaks = (text: string) => text.match(/\r\n|\r|\n/g)?.length ?? 0;

/** The label of each record (see the module's comment), by locationKey. */
export async function lineLabels(db: Database, loaded: LoadedTable, records: Located[]): Promise<Map<string, string>> {
  const labels = new Map<string, string>();
  if (records.length === 0) return labels;
  const { source } = loaded;
  if (source.format === 'parquet') {
    for (const r of records) labels.set(locationKey(r.file, r.position), `row ${r.position + 1}`);
    return labels;
  }
  const byFile = new Map<string, Set<number>>();
  for (const r of records) {
    if (!byFile.has(r.file)) byFile.set(r.file, new Set());
    byFile.get(r.file)!.add(r.position);
  }
  const starts = source.multiFile ? await fileStarts(db, loaded, [...byFile.keys()]) : new Map<string, number>();
  for (const [file, positions] of byFile) {
    const start = starts.get(file) ?? 0;
    const wanted = [...positions].map((p) => p - start);
    let lines = new Map<number, number>();
    try {
      lines = source.format === 'json' ? await jsonRecordLines(file, wanted) : await csvLines(db, loaded, file, start, wanted);
    } catch {
      // An unreadable file falls back to record numbers.
    }
    // A JSON array's records are numbered, with the line where each starts.
    const array = source.format === 'json' && !source.jsonLines;
    for (const position of positions) {
      const index = position - start;
      const line = lines.get(index);
      labels.set(
        locationKey(file, position),
        line === undefined ? `record ${index + 1}` : array ? `record ${index + 1} (line ${line})` : `line ${line}`,
      );
    }
  }
  return labels;
}

/** A table of several files holds them one after another: a record's place in its file counts from the file's first rowid. */
async function fileStarts(db: Database, loaded: LoadedTable, files: string[]): Promise<Map<string, number>> {
  const rows = await db.all<{ f: string; s: bigint }>(
    sql`SELECT __file AS f, min(__pos) AS s FROM ${positioned(loaded)} WHERE __file IN ${list(files)} GROUP BY __file`,
  );
  return new Map(rows.map((row) => [row.f, Number(row.s)]));
}

/** How the CSV sniffer read a file: the lines before the header (a CSV file has no comment lines, reader.ts). */
async function csvPreamble(db: Database, file: string): Promise<{ skipRows: number }> {
  try {
    const sniff = await db.one<{ skip: number | bigint }>(sql`SELECT SkipRows AS skip FROM sniff_csv(${literal(file)}, header = true, ${csvDialect([file])})`);
    return { skipRows: Number(sniff?.skip ?? 0) };
  } catch {
    // Without the sniffer's view, assume no preamble.
    return { skipRows: 0 };
  }
}

/** The physical lines of CSV records, given how DuckDB parsed the file. */
async function csvLines(db: Database, loaded: LoadedTable, file: string, start: number, wanted: number[]): Promise<Map<number, number>> {
  const preamble = await csvPreamble(db, file);
  const text = [...loaded.columns.values()].filter((c) => c.rawType === 'VARCHAR').map((c) => ident(c.name));
  const breaks = new Map<number, number>();
  const last = Math.max(...wanted);
  if (text.length > 0 && last > 0) {
    // Values that span lines (quoted line breaks), in the records before the last wanted one.
    const rows = await db.all<{ k: bigint; n: bigint }>(
      sql`SELECT __pos - ${start} AS k, ${join(text.map(lineBreaks), sql` + `)} AS n FROM ${positioned(loaded)}
         WHERE __file = ${file} AND __pos >= ${start} AND __pos < ${start} + ${last}
           AND (${join(text.map((v) => sql`contains(${v}, chr(10)) OR contains(${v}, chr(13))`), sql` OR `)})`,
    );
    for (const row of rows) breaks.set(Number(row.k), Number(row.n));
  }
  const headerBreaks = [...loaded.columns.values()].reduce((sum, c) => sum + countBreaks(c.name), 0);
  return csvRecordLines(file, { ...preamble, headerBreaks, blankIsRecord: loaded.columns.size === 1, breaks }, wanted);
}
