/**
 * Where and why DuckDB's reader failed on a table, found by reading its files again (lines.ts):
 * records with the wrong number of fields, a record over the size limit, a compressed file that
 * breaks off, a JSON record that does not parse, line endings that change. Run only after a failure.
 */
import { DataError } from '../../errors.js';
import { diagnoseCsv, diagnoseJsonArray, diagnoseJsonLines, firstLineEndingChange, firstNonUtf8Line, utf16Of } from '../lines.js';
import { TABLES } from '../schema.js';
import { fileLabel } from './problems.js';
import type { FileProblem, TableSource } from './types.js';

/** What a scan of one file found: problems by line, and whether it stopped before the end. */
interface Found {
  problems: { line: number; column?: string; message: string }[];
  stopped: boolean;
}

/** The problems of a CSV or JSON Lines file; undefined for a format without lines (or a file that cannot be read). */
async function scanFile(source: TableSource, file: string): Promise<Found | undefined> {
  const numericColumns = new Set(TABLES[source.table].columns.filter((c) => c.type === 'amount' || c.type === 'rate').map((c) => c.name));
  try {
    if (source.format === 'csv') return await diagnoseCsv(file, { ...(file.toLowerCase().endsWith('.tsv') ? { delimiter: 0x09 } : {}), numericColumns });
    if (source.format === 'json' && source.jsonLines) return await diagnoseJsonLines(file);
  } catch {
    // unreadable: nothing to say about its lines
  }
  return undefined;
}

/** Where a JSON array stops being JSON, as a problem; undefined when it parses (or cannot be read). */
async function brokenArray(dir: string, source: TableSource, file: string): Promise<FileProblem | undefined> {
  let broken: Awaited<ReturnType<typeof diagnoseJsonArray>>;
  try {
    broken = await diagnoseJsonArray(file);
  } catch {
    return undefined;
  }
  if (!broken) return undefined;
  return {
    table: source.table,
    file: fileLabel(dir, source, file),
    line: broken.record ? `record ${broken.record} (line ${broken.line})` : `line ${broken.line}`,
    ...(broken.column ? { column: broken.column } : {}),
    message: broken.message,
  };
}

/**
 * Where and why the reader failed: the problems of the first file that has any (fix it, and the
 * next is read). Empty when none is found.
 */
export async function diagnoseTable(dir: string, source: TableSource): Promise<FileProblem[]> {
  for (const file of source.files) {
    if (source.format === 'json' && !source.jsonLines) {
      const broken = await brokenArray(dir, source, file);
      if (broken) return [broken];
      continue;
    }
    const label = fileLabel(dir, source, file);
    // Text in another encoding: DuckDB's reader says only "CSV Error on Line: N" first.
    const encoded = await firstNonUtf8Line(file);
    if (encoded !== undefined) {
      const utf16 = encoded === 1 ? await utf16Of(file) : undefined;
      const why = utf16 ? `its text is ${utf16} (it starts with UTF-16's byte order mark)` : 'its bytes are not UTF-8 text (saved as Windows-1250 or Latin-1?)';
      return [{ table: source.table, file: label, line: `line ${encoded}`, message: `${why}; save the file as UTF-8` }];
    }
    const found = await scanFile(source, file);
    if (!found?.problems.length) continue;
    const problems: FileProblem[] = found.problems.map((p) => ({
      table: source.table,
      file: label,
      line: `line ${p.line}`,
      ...(p.column ? { column: p.column } : {}),
      message: p.message,
    }));
    if (found.stopped) {
      problems.push({ table: source.table, file: label, message: `the search stopped at these ${found.problems.length}; lines after them may have more` });
    }
    return problems;
  }
  return [];
}

/**
 * DuckDB's CSV reader cannot read a file whose lines end partly in CRLF and
 * partly in LF (its sniffer gives up). Reading it leniently (strict_mode off)
 * would silently drop surplus fields of malformed rows, so such a file is
 * refused with the line where the ending changes.
 */
export async function rejectMixedLineEndings(dir: string, source: TableSource): Promise<void> {
  for (const file of source.files) {
    let change: Awaited<ReturnType<typeof firstLineEndingChange>>;
    try {
      change = await firstLineEndingChange(file);
    } catch {
      continue;
    }
    if (!change) continue;
    throw new DataError(`cannot read ${fileLabel(dir, source, file)}: it mixes line endings, and the CSV reader needs one kind:`, [
      `${fileLabel(dir, source, file)}, line ${change.line}: this line ends in ${change.to}, the lines before it in ${change.from}`,
      `convert the file to one kind of line ending (for example \`dos2unix\` for LF) and run the command again`,
    ]);
  }
}
