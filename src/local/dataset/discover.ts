/** Finding a dataset's tables on disk: each table by base name, a file or a folder of files (docs/datasets.md). */
import { accessSync, constants, existsSync, lstatSync, readdirSync, readlinkSync, statSync, type Dirent, type Stats } from 'node:fs';
import { join, relative } from 'node:path';
import { DataError, readFailure } from '../../errors.js';
import { TABLE_NAMES, type TableName } from '../schema.js';
import type { FileFormat, TableSource } from './types.js';

const EXTENSIONS: { suffix: string; format: FileFormat; jsonLines: boolean }[] = [
  { suffix: '.csv', format: 'csv', jsonLines: false },
  { suffix: '.csv.gz', format: 'csv', jsonLines: false },
  { suffix: '.tsv', format: 'csv', jsonLines: false },
  { suffix: '.parquet', format: 'parquet', jsonLines: false },
  { suffix: '.json', format: 'json', jsonLines: false },
  { suffix: '.jsonl', format: 'json', jsonLines: true },
  { suffix: '.ndjson', format: 'json', jsonLines: true },
];

function matchExtension(file: string) {
  return EXTENSIONS.find((e) => file.toLowerCase().endsWith(e.suffix));
}

/**
 * What a path that is not a regular file or directory is, for a refusal: a broken
 * symbolic link, a loop of links, a named pipe, a device, a socket; undefined when
 * it is (or links to) a regular file or a directory.
 */
function notARegularFile(path: string): string | undefined {
  let target: Stats;
  try {
    target = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    let link = '';
    try {
      link = ` to ${readlinkSync(path)}`;
    } catch {
      // not a link after all
    }
    if (code === 'ENOENT') return `is a broken symbolic link${link} (its target does not exist)`;
    if (code === 'ELOOP') return `is a loop of symbolic links (it links${link}, which leads back to itself)`;
    return `cannot be read (${code ?? String(error)})`;
  }
  if (target.isFile() || target.isDirectory()) return undefined;
  const via = lstatSync(path).isSymbolicLink() ? `a symbolic link to ${readlinkSync(path)}, ` : '';
  const kind = target.isFIFO()
    ? 'a named pipe (FIFO)'
    : target.isCharacterDevice() || target.isBlockDevice()
      ? 'a device'
      : target.isSocket()
        ? 'a socket'
        : 'not a regular file';
  return `is ${via}${kind}, not a regular file: a table must be a file or a folder of files`;
}

/**
 * The data files under a table's folder, in any depth. Symbolic links to files are read (as the
 * reader's globs do); a link to a folder, which the globs do not follow, and anything else that is
 * not a regular file are refused in `problems`.
 */
function listFiles(dir: string, root: string, problems: string[], denied: string[]): string[] {
  const out: string[] = [];
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    denied.push(`${relative(root, dir)}/ cannot be read: ${readFailure(error)}`);
    return out;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.name.startsWith('.')) {
      // not listed, but DuckDB's glob of the folder reads it (plain.ts, sameFiles): one it cannot read is said as the others
      const why = entry.isFile() && matchExtension(entry.name) ? unreadableFile(path) : undefined;
      if (why) denied.push(`${relative(root, path)} cannot be read: ${why}`);
      continue;
    }
    if (entry.isDirectory()) out.push(...listFiles(path, root, problems, denied));
    else if (entry.isFile()) out.push(path);
    else if (matchExtension(entry.name) || entry.isSymbolicLink()) {
      const name = relative(root, path);
      const wrong = notARegularFile(path);
      if (wrong) problems.push(`${name} ${wrong}`);
      else if (statSync(path).isDirectory()) {
        problems.push(`${name} is a symbolic link to a folder, which is not read; move the files into the table's folder or link them one by one`);
      } else if (matchExtension(entry.name)) out.push(path);
    }
  }
  return out;
}

/**
 * Whether each entry of the dataset is a file or a directory, links followed. An entry named as a
 * table that is neither (a broken or looping link, a FIFO, a device) is refused in `unreadable`.
 */
function entryKinds(dir: string, entries: Dirent[], unreadable: string[]): Map<string, 'file' | 'directory'> {
  const kinds = new Map<string, 'file' | 'directory'>();
  for (const entry of entries) {
    if (entry.isFile()) kinds.set(entry.name, 'file');
    else if (entry.isDirectory()) kinds.set(entry.name, 'directory');
    else {
      const ext = matchExtension(entry.name);
      const named = (TABLE_NAMES as readonly string[]).includes(ext ? entry.name.slice(0, -ext.suffix.length) : entry.name);
      if (!named) continue;
      const wrong = notARegularFile(join(dir, entry.name));
      if (wrong) unreadable.push(`${entry.name} ${wrong}`);
      else kinds.set(entry.name, statSync(join(dir, entry.name)).isDirectory() ? 'directory' : 'file');
    }
  }
  return kinds;
}

/** A table as a folder of files of one format; undefined (with a problem said) when it holds none or mixes formats. */
function folderSource(table: TableName, path: string, dir: string, { unreadable, denied, problems }: Record<'unreadable' | 'denied' | 'problems', string[]>): TableSource | undefined {
  const deniedBefore = denied.length;
  const files = listFiles(path, dir, unreadable, denied).filter((f) => matchExtension(f));
  // A folder that cannot be read is said so (denied), not said to be empty.
  if (files.length === 0 && denied.length > deniedBefore) return undefined;
  if (files.length === 0) {
    problems.push(`${table}/: the folder holds no .csv, .csv.gz, .parquet, .json, .jsonl or .ndjson files`);
    return undefined;
  }
  const kinds = new Set(files.map((f) => matchExtension(f)!.format));
  if (kinds.size > 1) {
    problems.push(`${table}/: the folder mixes file formats (${[...kinds].join(', ')}); use one`);
    return undefined;
  }
  const suffixes = [...new Set(files.map((f) => matchExtension(f)!.suffix))];
  // One read takes a folder's CSV files with one delimiter: a comma here and a tab there would fail as DuckDB's schema mismatch.
  if (suffixes.includes('.tsv') && suffixes.length > 1) {
    problems.push(`${table}/: the folder mixes comma-separated (${suffixes.filter((s) => s !== '.tsv').join(', ')}) and tab-separated (.tsv) files; use one`);
    return undefined;
  }
  return {
    table,
    patterns: suffixes.map((suffix) => join(path, '**', `*${suffix}`)),
    display: `${table}/`,
    files: files.sort(),
    format: matchExtension(files[0]!)!.format,
    jsonLines: files.every((f) => matchExtension(f)!.jsonLines),
    hive: files.some((f) => relative(path, f).split(/[\\/]/).some((seg) => seg.includes('='))),
    multiFile: true,
  };
}

/** A table as one file NAME.<extension>, when the entry is one of the table's. */
function fileSource(table: TableName, name: string, path: string): TableSource | undefined {
  const ext = matchExtension(name);
  if (!ext || name.slice(0, -ext.suffix.length) !== table) return undefined;
  return { table, patterns: [path], display: name, files: [path], format: ext.format, jsonLines: ext.jsonLines, hive: false, multiFile: false };
}

/** Why a file cannot be read (permission denied, say), in words; undefined when it can. */
export function unreadableFile(path: string): string | undefined {
  try {
    accessSync(path, constants.R_OK);
    return undefined;
  } catch (error) {
    return readFailure(error);
  }
}

/**
 * Finds each table by base name: NAME.csv, NAME.csv.gz, NAME.parquet, NAME.json(l), NAME.ndjson or a folder NAME/.
 * `name`: how messages name the dataset (the path as the user gave it; dir is where it is).
 */
export function discoverTables(dir: string, name = dir): Map<TableName, TableSource> {
  if (!existsSync(dir)) throw new DataError(`not found: ${name}`);
  if (!statSync(dir).isDirectory()) {
    // A file given as --data: only one `convx data import` wrote is read (recognised by its content), and one not read cannot be told.
    const denied = unreadableFile(dir);
    if (denied) throw new DataError(`cannot read ${name}: ${denied}`);
    throw new DataError(`${name} is not a directory of dataset files, nor a file written by convx data import`, [
      'give the directory of the exported files, or a .duckdb file that convx data import wrote',
    ]);
  }
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    throw new DataError(`cannot read the dataset's folder ${name}: ${readFailure(error)}`);
  }
  const found = new Map<TableName, TableSource>();
  const problems: string[] = [];
  // Tables that are neither a regular file nor a directory (a broken or looping link, a FIFO, a device): refused.
  const unreadable: string[] = [];
  // Tables' files and folders that cannot be read (no permission, say).
  const denied: string[] = [];
  const kinds = entryKinds(dir, entries, unreadable);
  for (const table of TABLE_NAMES) {
    const candidates: TableSource[] = [];
    for (const entry of entries) {
      const path = join(dir, entry.name);
      const kind = kinds.get(entry.name);
      const candidate =
        kind === 'directory' && entry.name === table
          ? folderSource(table, path, dir, { unreadable, denied, problems })
          : kind === 'file'
            ? fileSource(table, entry.name, path)
            : undefined;
      if (candidate) candidates.push(candidate);
    }
    if (candidates.length > 1) {
      problems.push(`${table}: found ${candidates.map((c) => c.display).join(' and ')}; keep one of them`);
    } else if (candidates[0]) {
      found.set(table, candidates[0]);
    }
  }
  if (unreadable.length) {
    throw new DataError(`the dataset at ${name} holds tables that are not regular files, which convx refuses to read:`, [...unreadable, ...denied, ...problems]);
  }
  for (const source of found.values()) {
    for (const file of source.files) {
      const why = unreadableFile(file);
      if (why) denied.push(`${relative(dir, file)} cannot be read: ${why}`);
    }
  }
  if (denied.length) throw new DataError(`the dataset at ${name} holds files that cannot be read:`, [...denied, ...problems]);
  if (problems.length) throw new DataError(`the dataset at ${name} is ambiguous or incomplete:`, problems);
  return found;
}
