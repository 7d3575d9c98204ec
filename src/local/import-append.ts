/**
 * `convx data import DIR --into FILE.duckdb --append`: the new files of a dataset added to the
 * file an earlier import of it wrote, with the result of a full import of all the files. The
 * files it was made from (import-files.ts) must be there unchanged, and new files come after
 * them, so that every stored row keeps its row_id. The update is written to a staging file beside
 * FILE and renamed over it when complete: a server keeps answering from the old file until it is
 * reloaded, and a failed or killed update leaves the old file as it was.
 */
import { existsSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { DataError, UsageError } from '../errors.js';
import type { EarlyCopy } from './append/early.js';
import { NeedsFullImport } from './append/new-rows.js';
import { appendInPlace } from './append/update.js';
import { datasetFiles, hashedForAppend, newFiles, touchedFiles, withNewHashes } from './import-files.js';
import { importFiles, type ImportOptions, type ImportSummary } from './import-writer.js';
import { readImportMeta, type ImportedFile, type ImportMeta } from './imported.js';
import { assertWritable, fileIdentity, writtenFile } from './staging.js';
import { pathWord } from '../words.js';

export interface AppendSummary extends ImportSummary {
  /** The files added, in the order they were read; none when the dataset had nothing new (then the file is left as it was). */
  added: ImportedFile[];
  /** Imported files with another modification time and the bytes the import read (copied or exported again): taken as imported. */
  touched: ImportedFile[];
  /** How: only the new files read and what they change attributed again ('short'), every file read and attributed ('full'), or nothing to add ('none'). */
  way: 'short' | 'full' | 'none';
  /** Why the update took the long way ('full'): a new plugin, the columns of a table differ, ... */
  why?: string;
}

/** The file to append to: an existing .duckdb file written by `convx data import` from the files it names; identity: the file read (fileIdentity). */
async function appendTarget(name: string, into: string, shown: string, threads?: number): Promise<{ meta: ImportMeta & { files: ImportedFile[] }; identity: string }> {
  if (!existsSync(into)) throw new UsageError(`--append: ${shown} does not exist`, [], `write it first: convx data import ${pathWord(name)} --into ${pathWord(shown)}`);
  if (!statSync(into).isFile()) throw new UsageError(`--append: ${shown} is not a file`);
  assertWritable(dirname(into), into, { into: shown, folder: dirname(shown) });
  // Taken before the list is read: a file replaced after it is refused when the update's result would replace it (Staging.commit).
  const identity = fileIdentity(into);
  const meta = await readImportMeta(into, threads);
  if (!meta.files) {
    // A file of --split-plugins holds one plugin and is named after it: a full import into it would
    // write every plugin's rows under that plugin's name (a server of the directory refuses it).
    const [only] = meta.scopes;
    const split = meta.scopes.length === 1 && only!.plugin !== null && basename(into) === `${only!.plugin}.duckdb`;
    throw new DataError(`cannot append to ${shown}: it does not name the files it was imported from (a file of --split-plugins, or of an older convx)`, [
      split
        ? `it looks like a plugin's file of --split-plugins: write the directory's files again: convx data import ${pathWord(name)} --split-plugins --into ${pathWord(`${dirname(shown)}/`)} --force`
        : `run a full import instead: convx data import ${pathWord(name)} --into ${pathWord(shown)} --force`,
    ]);
  }
  return { meta: meta as ImportMeta & { files: ImportedFile[] }, identity };
}

/** The reference currency of the update: the one the import was asked for; another one asked is refused. */
function referenceOf(meta: ImportMeta, name: string, shown: string, asked: string | undefined): string | undefined {
  const stored = meta.referenceCurrencyAsked ?? undefined;
  const norm = (c: string | undefined) => c?.trim().toUpperCase() || undefined;
  if (asked !== undefined && norm(asked) !== norm(stored)) {
    throw new UsageError(
      `--append: ${shown} was imported ${stored ? `with --reference-currency ${stored}` : 'without --reference-currency'}; an update keeps it`,
      [],
      `drop --reference-currency, or run a full import: convx data import ${pathWord(name)} --into ${pathWord(shown)} --force --reference-currency ${asked}`,
    );
  }
  return stored;
}

/**
 * Adds the new files of dir to into, with the result of a full import of all the files (findings,
 * row ids, first rows of sources and contacts, FX look-ups, the attribution of earlier orders by
 * later rows), replacing into atomically. The short way (append/update.ts) reads only the new
 * files and attributes again only the orders they can change; where it cannot (a new table or
 * plugin, columns read otherwise, another reference currency), every file is read and attributed.
 * early: a copy of into the command started before this module loaded (append/early.ts).
 */
export async function appendDataset(dir: string, named: string, options: ImportOptions = {}, early?: EarlyCopy): Promise<AppendSummary> {
  // The copy started early (append/early.ts) is the short way's, which takes it over; on every other
  // way out it is removed here, before a full import writes a staging file of the same name.
  let taken: EarlyCopy | undefined;
  try {
    const into = writtenFile(named, '--into', options.intoName ?? named);
    // The dataset as messages name it: as the user gave it.
    const [name, shown] = [options.name ?? dir, options.intoName ?? named];
    const { meta, identity } = await appendTarget(name, into, shown, options.threads);
    const referenceCurrency = referenceOf(meta, name, shown, options.referenceCurrency);
    const listed = await hashedForAppend(dir, meta.files, await datasetFiles(dir, options.threads, name));
    const added = newFiles(name, shown, meta.files, listed, meta.source);
    const touched = touchedFiles(meta.files, listed);
    const files = await withNewHashes(dir, listed, added);
    // Nothing new: the file as it was (the touched files' times are stored by the next update that adds files).
    if (added.length === 0) return { file: into, bytes: statSync(into).size, tables: meta.tables, scopes: meta.scopes, findings: meta.findings, added, touched, way: 'none' };
    const asked = { ...options, ...(referenceCurrency !== undefined ? { referenceCurrency } : {}) };
    // The short way reads only the new files and attributes again only what they can change; the long way, everything.
    // Only a copy of the very file whose list of files was read: another update may have replaced it since the command started.
    taken = early?.copy.target === into && early.identity === identity ? early : undefined;
    const short = await appendInPlace(dir, into, meta, files, added, asked, identity, taken);
    if (!(short instanceof NeedsFullImport)) return { ...short, added, touched, way: 'short' };
    return { ...(await importFiles(dir, into, files, asked, { meta, identity })), added, touched, way: 'full', why: short.message };
  } finally {
    if (early && early !== taken) await early.staging.remove();
  }
}
