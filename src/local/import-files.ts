/**
 * The files an imported file was made from (`files` of its convx_dataset), and what `data import
 * --append` may add to them: files after the ones read, never a change to those. A record's
 * row_id is its place in its table's files in name order, so an old file changed or removed, or a
 * new file read before an old one (datasetFiles keeps the order the read takes them), would move rows that the stored attribution names: such
 * a dataset is refused with the full import to run instead.
 */
import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { DataError, readFailure } from '../errors.js';
import { pathWord, plural } from '../words.js';
import type { Dataset } from './dataset.js';
import { discoverTables } from './dataset/discover.js';
import { Database } from './db.js';
import { everyFileAsRead } from './dataset/globs.js';
import { META, type ImportedFile, type ImportedTable, type ImportMeta } from './imported.js';
import { TABLE_NAMES, TABLES, type TableName } from './schema.js';
import { ident, int, sql, table } from './sql.js';

/**
 * Every file of the dataset at dir, by table, in the order its table's read takes them (DuckDB's
 * globs, dataset/globs.ts: not name order, e.g. a folder's .csv files before its .csv.gz ones and
 * its own files before its subfolders'), with its size and modification time (name: the dataset as messages name it). threads: those of
 * the import's DuckDB (CONVX_THREADS), so that the import's next statements reuse this instance
 * (instances.ts) instead of creating one, some 10 ms.
 */
export async function datasetFiles(dir: string, threads?: number, name = dir): Promise<ImportedFile[]> {
  const out: ImportedFile[] = [];
  const db = await Database.open(':memory:', { ...(threads ? { threads } : {}), reuse: true });
  try {
    const sources = [...discoverTables(dir, name)];
    // One statement for every table's globs.
    const reads = await everyFileAsRead(db, sources.map(([, source]) => source));
    for (const [i, [table, source]] of sources.entries()) {
      const read = reads[i]!;
      // A file the globs do not list as such (its path holds a glob character) keeps its name order, after them.
      const place = (file: string) => (read.includes(file) ? read.indexOf(file) : read.length);
      for (const file of [...source.files].sort((a, b) => place(a) - place(b))) {
        const s = statSync(file, { bigint: true });
        out.push({ table, path: relative(dir, file).split(sep).join('/'), size: Number(s.size), mtimeNs: String(s.mtimeNs) });
      }
    }
  } finally {
    db.close();
  }
  return out;
}

/**
 * The chunk contentHash reads a file in: its size as listed (and one byte, so that the first read
 * takes it all), from 16 KiB to 1 MiB. A file stream allocates a buffer of the whole chunk for each
 * read, its last (the end of the file) too, so a chunk of 1 MiB cost a dataset of many small files
 * two megabytes of fresh memory per file: an import of 100 files of a few kilobytes spent about
 * 0.1 s of its 0.35 s of CPU on them and on the collections they set off. A file longer than
 * listed is still read to its end, in more chunks.
 */
const hashChunk = (size: number) => Math.min(1 << 20, Math.max(size + 1, 1 << 14));

/** The SHA-256 of a file's bytes (hex), read in chunks: the hashing runs on this thread, which DuckDB's work leaves idle. */
async function contentHash(dir: string, file: ImportedFile): Promise<string> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(join(dir, file.path), { highWaterMark: hashChunk(file.size) })) hash.update(chunk as Buffer);
  } catch (error) {
    // Gone since it was listed, or not readable: as DuckDB's read of it would fail.
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'it is gone' : readFailure(error);
    throw new DataError(`cannot read ${file.path} of ${dir}: ${why}`);
  }
  return hash.digest('hex');
}

/**
 * files with the SHA-256 of each one's bytes (ImportedFile.sha256), read now, after their size and
 * time were taken and before the import reads them; once read, unchangedSinceListed drops the hash
 * of a file written meanwhile. One at a time: the bytes of a dataset are read once more, about
 * 0.2 s for the 150 MB of the bench's 2M orders.
 */
export async function withContentHashes(dir: string, files: readonly ImportedFile[]): Promise<ImportedFile[]> {
  const out: ImportedFile[] = [];
  for (const file of files) out.push({ ...file, sha256: await contentHash(dir, file) });
  return out;
}

/**
 * The files of now with the hashes --append needs before newFiles compares them with read, the
 * imported ones: a file as it was imported (size and time) keeps its stored hash; an imported file
 * of the same size and another time is hashed where the import stored its hash, so that the same
 * bytes (the file copied or exported again) count as the file imported. The rest (another size,
 * no stored hash) newFiles refuses; new files are hashed once it has taken them (withNewHashes).
 */
export async function hashedForAppend(dir: string, read: readonly ImportedFile[], now: readonly ImportedFile[]): Promise<ImportedFile[]> {
  const stored = new Map(read.map((f) => [f.path, f]));
  const out: ImportedFile[] = [];
  for (const file of now) {
    const old = stored.get(file.path);
    if (old && old.size === file.size && old.mtimeNs === file.mtimeNs) out.push(old.sha256 ? { ...file, sha256: old.sha256 } : file);
    else if (old && old.size === file.size && old.sha256) out.push({ ...file, sha256: await contentHash(dir, file) });
    else out.push(file);
  }
  return out;
}

/** files with the hashes of those added (newFiles' answer), read now, before the update reads them. */
export async function withNewHashes(dir: string, files: readonly ImportedFile[], added: readonly ImportedFile[]): Promise<ImportedFile[]> {
  const hashed = new Map((await withContentHashes(dir, added)).map((f) => [f.path, f]));
  return files.map((f) => hashed.get(f.path) ?? f);
}

/**
 * files as an import stores them once DuckDB has read them: one whose size or modification time
 * is no longer what was listed (before its hash and its read) was written meanwhile, and the read
 * may hold part of it, so its hash goes: a later --append refuses it by its time, as one of an
 * import that stored no hashes, rather than take its bytes (the same again once rewritten) for
 * those read.
 */
export function unchangedSinceListed(dir: string, files: readonly ImportedFile[]): ImportedFile[] {
  return files.map((file) => {
    if (file.sha256 === undefined) return file;
    try {
      const s = statSync(join(dir, file.path), { bigint: true });
      if (Number(s.size) === file.size && String(s.mtimeNs) === file.mtimeNs) return file;
    } catch {
      // gone: no hash
    }
    const { sha256: _, ...rest } = file;
    return rest;
  });
}

/** Imported files of now (hashedForAppend) with another modification time and the bytes the import read: taken as imported. */
export function touchedFiles(read: readonly ImportedFile[], now: readonly ImportedFile[]): ImportedFile[] {
  const stored = new Map(read.map((f) => [f.path, f]));
  return now.filter((f) => {
    const old = stored.get(f.path);
    return old !== undefined && old.mtimeNs !== f.mtimeNs && sameBytes(old, f);
  });
}

/** The same size and the same SHA-256, where the import stored one. */
function sameBytes(old: ImportedFile, now: ImportedFile): boolean {
  return old.size === now.size && old.sha256 !== undefined && now.sha256 === old.sha256;
}

/** The most problems newFiles lists, the last line saying how many more there are. */
const MAX_LISTED = 10;

/** The first lines of a long list (the rest adds nothing a user acts on), the last saying how many more there are. */
function firstOf(lines: string[]): string[] {
  return lines.length > MAX_LISTED ? [...lines.slice(0, MAX_LISTED - 1), `and ${lines.length - (MAX_LISTED - 1)} more`] : lines;
}

/**
 * The files of now that the import did not read; a DataError when an old file changed or is gone,
 * or a new one is read before an old file of its table (its rows would come before theirs). An old
 * file with another modification time and the same bytes (hashedForAppend) has not changed. name and file: the dataset and --into as messages name them.
 */
export function newFiles(name: string, file: string, read: readonly ImportedFile[], now: readonly ImportedFile[], source?: string): ImportedFile[] {
  const full = `run a full import instead: convx data import ${pathWord(name)} --into ${pathWord(file)} --force`;
  const current = new Map(now.map((f) => [f.path, f]));
  const gone = read.filter((old) => !current.has(old.path)).map((old) => `${old.path} was imported and is gone`);
  const kept = read.length - gone.length;
  if (kept * 2 < read.length) {
    // Fewer than half of its files: another dataset, most likely, which --force would put in the file's place.
    throw new DataError(`cannot append to ${file}: ${name} holds ${kept === 0 ? 'none' : kept} of the ${plural(read.length, 'file')} it was imported from${source ? ` (${source})` : ''}`, [
      ...firstOf(gone),
      `check --into and the dataset; to replace the file with this dataset instead: convx data import ${pathWord(name)} --into ${pathWord(file)} --force`,
    ]);
  }
  const problems = [...gone];
  for (const old of read) {
    const found = current.get(old.path);
    if (!found) continue;
    if (found.size !== old.size) problems.push(`${old.path} changed since it was imported`);
    else if (found.mtimeNs === old.mtimeNs || sameBytes(old, found)) continue;
    else if (old.sha256 !== undefined) problems.push(`${old.path} changed since it was imported (the same size, other bytes)`);
    else problems.push(`${old.path} changed since it was imported (the same size, another modification time)`);
  }
  const known = new Set(read.map((f) => f.path));
  const added = now.filter((f) => !known.has(f.path));
  // now is in the order the read takes the files: a new file must come after every imported one of its table.
  for (const f of added) {
    const table = now.filter((g) => g.table === f.table);
    const later = table.slice(table.indexOf(f) + 1).reverse().find((g) => known.has(g.path));
    if (later) problems.push(`${f.path} is new and is read before ${later.path}, which was imported (new files of a table must come after its imported ones in the order they are read)`);
  }
  if (problems.length) {
    throw new DataError(`cannot append to ${file}: the dataset at ${name} changed in a way only a full import can take`, [...firstOf(problems), full]);
  }
  return added;
}

/** Each table's columns as the reader found them ("name type", in the files' order, plugin_id and all), which its typed values depend on. */
export function rawColumns(dataset: Dataset): Partial<Record<TableName, string[]>> {
  const out: Partial<Record<TableName, string[]>> = {};
  for (const [name, loaded] of dataset.tables) out[name] = [...loaded.columns.values()].map((c) => `${c.name} ${c.rawType}`);
  return out;
}

/** True when every table the import stored was read now with the same columns (so its stored rows are typed as they would be now). */
export function sameColumns(meta: ImportMeta, now: Partial<Record<TableName, string[]>>): boolean {
  if (!meta.columns) return false;
  return meta.tables.every((t) => JSON.stringify(meta.columns![t.table]) === JSON.stringify(now[t.table]));
}

/**
 * The typed tables of an update (--append) into the copy attached as out, which holds those of
 * previous: each stored table gets the rows after its stored ones (new files come after the
 * imported ones, so a stored row keeps its place and its row_id), in the order a full import
 * writes them; a table new to the dataset is written whole.
 */
export async function appendRows(db: Database, dataset: Dataset, previous: ImportMeta): Promise<ImportedTable[]> {
  const tables: ImportedTable[] = [];
  for (const name of TABLE_NAMES) {
    const loaded = dataset.tables.get(name);
    if (!loaded) continue;
    const stored = previous.tables.find((t) => t.table === name)?.rows;
    // A table's rows in file order: row_id counts them from 1; a table without one (unordered) holds them in insertion order (rowid from 0).
    const position = TABLES[name].unordered ? sql`rowid` : sql`row_id - 1`;
    const into = table(name, 'out.main');
    if (stored === undefined) await db.exec(sql`CREATE TABLE ${into} AS SELECT * FROM ${table(name)} ORDER BY ${position}`);
    else await db.exec(sql`INSERT INTO ${into} SELECT * FROM ${table(name)} WHERE ${position} >= ${int(stored)} ORDER BY ${position}`);
    const count = await db.one<{ n: bigint }>(sql`SELECT count(*) AS n FROM ${into}`);
    tables.push({ table: name, display: loaded.source.display, hasPluginId: loaded.hasPluginId, rows: Number(count?.n ?? 0) });
  }
  return tables;
}

/** The stored attribution and list of what the copy held, which an update writes anew. */
export async function dropStored(db: Database, previous: ImportMeta): Promise<void> {
  for (const scope of previous.scopes) await db.exec(sql`DROP SCHEMA IF EXISTS out.${ident(scope.schema)} CASCADE`);
  await db.exec(sql`DROP TABLE out.main.${ident(META)}`);
  // Their blocks free for what is written next, so that the file does not grow by an attribution per update.
  await db.exec(sql`CHECKPOINT out`);
}
