/**
 * The copy of an update (`data import --append`) started as the command starts, before DuckDB and
 * the import's modules load (some 0.1 s): the kernel copies the file (0.1 to 0.35 s for the bench's
 * 350 MB) while they load and the file's list of imported files is read, rather than after. Started
 * only where the dataset holds a file modified after the imported file was written, as a day's new
 * exports are: an update with nothing new does not copy the file for nothing. Whether it starts
 * never changes the result: appendDataset takes the copy, or removes it and makes none (the long
 * way, nothing to add, a refusal). Node's file calls only: this module loads no DuckDB.
 */
import { accessSync, constants, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Staging, writtenFile, type StagedFile } from '../staging.js';

/** A copy of the file to update, started early; appendDataset takes it over. */
export interface EarlyCopy {
  staging: Staging;
  copy: StagedFile;
}

/** The most entries of the dataset's folder looked at for a newer file: a folder holding more is left to the update's own copy. */
const MAX_ENTRIES = 20_000;

/** Whether some file under dir (its folders too) was modified after ms. */
function newerFile(dir: string, ms: number): boolean {
  const entries = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  if (entries.length > MAX_ENTRIES) return false;
  return entries.some((entry) => {
    try {
      const stat = statSync(join(dir, entry));
      return stat.isFile() && stat.mtimeMs > ms;
    } catch {
      return false;
    }
  });
}

/**
 * The copy of into (the file a symbolic link names, as the update writes it) started where dir holds
 * a file newer than it; undefined where it does not, or where anything is amiss (no such file, a
 * folder that cannot be written): the update then finds and says what.
 */
export function copyEarly(dir: string, into: string): EarlyCopy | undefined {
  try {
    const target = writtenFile(into);
    const stat = statSync(target);
    if (!stat.isFile()) return undefined;
    accessSync(dirname(target), constants.W_OK);
    if (!newerFile(dir, stat.mtimeMs)) return undefined;
    const staging = new Staging();
    return { staging, copy: staging.copy(target) };
  } catch {
    return undefined;
  }
}
