/**
 * The copy of an update (`data import --append`) started as the command starts, before DuckDB and
 * the import's modules load (some 0.1 s): the kernel copies the file (0.1 to 0.35 s for the bench's
 * 350 MB) while they load and the file's list of imported files is read, rather than after. Started
 * only where one of the dataset's data files (those a full import would read, found as it finds
 * them) was modified after the imported file was written, as a day's new exports are: an update
 * with no file modified since does not copy the file for nothing, nor does a note or an editor's
 * file beside the tables (imported files given a new time with the same bytes, and nothing new, do:
 * the copy is removed, and their times are stored by the next update that adds files). Whether it
 * starts never changes the result: appendDataset takes the copy, when it was made of the very file
 * the update reads (fileIdentity), or removes it and makes none (the long way, nothing to add, a
 * refusal). Node's file calls only: this module loads no DuckDB.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { discoverTables } from '../dataset/discover.js';
import { fileIdentity, Staging, writtenFile, type StagedFile } from '../staging.js';

/** A copy of the file to update, started early, and which file it copies; appendDataset takes it over. */
export interface EarlyCopy {
  staging: Staging;
  copy: StagedFile;
  /** The file copied (fileIdentity), as it was when the copy started. */
  identity: string;
}

/** The most data files of a dataset looked at for a newer one: a dataset of more is left to the update's own copy. */
const MAX_FILES = 10_000;

/** Whether one of the dataset's data files (as discovery finds them: no hidden files, no linked folders) was modified after ms. */
function newerDataFile(dir: string, ms: number): boolean {
  const files = [...discoverTables(dir).values()].flatMap((source) => source.files);
  if (files.length > MAX_FILES) return false;
  return files.some((file) => statSync(file).mtimeMs > ms);
}

/**
 * The copy of into (the file a symbolic link names, as the update writes it) started where a data
 * file of dir is newer than it; undefined where none is, or where anything is amiss (no such file,
 * a folder that cannot be written, a dataset discovery refuses): the update then finds and says what.
 */
export function copyEarly(dir: string, into: string): EarlyCopy | undefined {
  try {
    const target = writtenFile(into);
    const stat = statSync(target);
    if (!stat.isFile()) return undefined;
    accessSync(dirname(target), constants.W_OK);
    if (!newerDataFile(dir, stat.mtimeMs)) return undefined;
    const identity = fileIdentity(target);
    const staging = new Staging();
    return { staging, copy: staging.copy(target, identity), identity };
  } catch {
    return undefined;
  }
}
