/**
 * The files an imported file was made from (`files` of its convx_dataset), and what `data import
 * --append` may add to them: files after the ones read, never a change to those. A record's
 * row_id is its place in its table's files in name order, so an old file changed or removed, or a
 * new file that sorts before an old one, would move rows that the stored attribution names: such
 * a dataset is refused with the full import to run instead.
 */
import { statSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { DataError } from '../errors.js';
import { discoverTables } from './dataset/discover.js';
import type { ImportedFile } from './imported.js';

/** Every file of the dataset at dir, by table, in the order its table reads them, with its size and modification time. */
export function datasetFiles(dir: string): ImportedFile[] {
  const out: ImportedFile[] = [];
  for (const [table, source] of discoverTables(dir)) {
    for (const file of source.files) {
      const s = statSync(file, { bigint: true });
      out.push({ table, path: relative(dir, file).split(sep).join('/'), size: Number(s.size), mtimeNs: String(s.mtimeNs) });
    }
  }
  return out;
}

/**
 * The files of now that the import did not read; a DataError when an old file changed or is gone,
 * or a new one sorts before an old file of its table (its rows would come before theirs).
 */
export function newFiles(dir: string, file: string, read: readonly ImportedFile[], now: readonly ImportedFile[]): ImportedFile[] {
  const full = `run a full import instead: convx data import ${dir} --into ${file} --force`;
  const current = new Map(now.map((f) => [f.path, f]));
  const problems: string[] = [];
  for (const old of read) {
    const found = current.get(old.path);
    if (!found) problems.push(`${old.path} was imported and is gone`);
    else if (found.size !== old.size || found.mtimeNs !== old.mtimeNs) problems.push(`${old.path} changed since it was imported`);
  }
  const known = new Set(read.map((f) => f.path));
  const added = now.filter((f) => !known.has(f.path));
  for (const f of added) {
    const last = read.filter((r) => r.table === f.table).map((r) => r.path).sort().at(-1);
    if (last !== undefined && f.path < last) problems.push(`${f.path} is new and sorts before ${last}, which was imported (new files of a table must come after its imported ones)`);
  }
  if (problems.length) {
    throw new DataError(`cannot append to ${file}: the dataset at ${dir} changed in a way only a full import can take`, [...problems, full]);
  }
  return added;
}
