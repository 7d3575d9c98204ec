/**
 * Files written under a staging name beside their target (FILE.tmp-PID-TOKEN) and renamed over it once
 * complete: an import (import-writer.ts) and an update (`--append`, append/update.ts) write this
 * way, so that a failed or killed one replaces nothing and a server keeps reading the old file.
 * Node's file calls and `rm` only: no DuckDB.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, chownSync, constants, existsSync, linkSync, lstatSync, readdirSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { DataError, UsageError } from '../errors.js';
import { alive } from '../pid.js';

/**
 * The file an import or an update writes (or --output a page, commands/page.ts): into itself, or,
 * where into is a symbolic link, the file it points to (the link stays, and whoever reads through
 * it or by the file's own name sees the new data; renamed over, the link would become a file and
 * the other name keep the old data). A link to nothing is refused: it names no file to write.
 */
export function writtenFile(into: string, flag = '--into', shown = into): string {
  let link: boolean;
  try {
    link = lstatSync(into).isSymbolicLink();
  } catch {
    return into;
  }
  if (!link) return into;
  try {
    return realpathSync(into);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const what = code === 'ENOENT' ? 'a file that does not exist' : code === 'ELOOP' ? 'itself, through a loop of links' : `a file it cannot resolve (${code ?? String(error)})`;
    throw new UsageError(`${flag} ${shown} is a symbolic link to ${what}`, [], 'point it at the file to write, or give the file itself');
  }
}

/**
 * A file's identity: its device, inode, size and modification time. Another file renamed over the
 * name (a concurrent update's), or the file written, gives another: a copy staged of a file
 * (Staging.copy) is renamed over it only while it stays the same.
 */
export function fileIdentity(path: string): string {
  const s = statSync(path, { bigint: true });
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}`;
}

/** Refuses, before any work, an --into whose folder this process cannot write (a read-only file system, no permission): the staging file is made there. */
export function assertWritable(folder: string, into: string, named: { into: string; folder: string } = { into, folder }): void {
  try {
    accessSync(folder, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'EROFS' ? 'a read-only file system' : code === 'EACCES' || code === 'EPERM' ? 'no permission to write there' : (code ?? String(error));
    throw new UsageError(`--into ${named.into}: cannot write into ${named.folder} (${why})`, [], 'choose an --into in a folder you can write');
  }
}

/** A staging file and the file it becomes; ready: resolves once the staging file may be written (a copy complete); copy: made as a copy of the target (Staging.copy), so it exists once ready. */
export interface StagedFile {
  staging: string;
  target: string;
  ready: Promise<void>;
  copy: boolean;
}

/**
 * Refuses a copy (Staging.copy) whose file is gone before it is opened, removed by another import
 * into the target that took it for one of a process gone (removeAbandoned): opened, DuckDB would
 * make an empty database of that name.
 */
export function assertStaged(file: StagedFile): void {
  if (file.copy && !existsSync(file.staging)) throw stagingGone(file.staging, file.target);
}

/**
 * A replaced file this large is removed by a process of its own after the rename, not by the
 * command: the last unlink of a file frees its blocks and drops its pages from the page cache,
 * some 70 ms for the 350 MB of the bench's 2M orders on ext4, a twelfth of an update's time.
 * Below it the unlink costs less than starting that process.
 */
export const REMOVE_LATER_BYTES = 64 * 2 ** 20;

/** Replaced files named by this process so far: each commit's old files take new names, so a large one still being removed is not removed again. */
let replacements = 0;

/**
 * This process's part of its staging names beside its process id: a process id names one process
 * only within a PID namespace (containers sharing a folder each run their first process as pid 1),
 * so two imports into one file from two namespaces would otherwise write, remove and rename the
 * same staging file.
 */
const TOKEN = randomBytes(4).toString('hex');

/**
 * The staging files of this process not yet renamed into place or removed, of every Staging: a
 * process that exits first (Ctrl-C or SIGTERM, on which bin/convx.js exits with 130 or 143)
 * removes them on its way out. One killed outright leaves them to the next import into the
 * target (removeAbandoned).
 */
const pending = new Set<string>();
let removedOnExit = false;

function track(files: string[]): void {
  if (!removedOnExit) {
    removedOnExit = true;
    process.on('exit', () => pending.forEach(removeQuietly));
  }
  for (const file of files) pending.add(file);
}

/**
 * A staging file or folder that this process removes on its way out unless `done` is called first
 * (it was renamed into place, or removed): `data generate`'s folder, interrupted by Ctrl-C.
 */
export function stagedUntilExit(path: string): { done: () => void } {
  track([path]);
  return { done: () => pending.delete(path) };
}

/**
 * The files of one import, staged together: every one renamed into place once all are complete
 * (commit), or all removed (remove). Staging files, and old files still to be removed, that a
 * process now gone left behind (killed, crashed) are removed on the way.
 */
export class Staging {
  private readonly files: [staging: string, target: string][] = [];
  private readonly copies: Promise<void>[] = [];
  /** The targets copied (copy), with the identity each had when what the copy is updated from was read of it. */
  private readonly copied = new Map<string, string>();

  add(target: string): StagedFile {
    const staging = `${target}.tmp-${process.pid}-${TOKEN}`;
    this.files.push([staging, target]);
    for (const file of [staging, `${staging}.wal`]) rmSync(file, { force: true });
    track([staging, `${staging}.wal`]);
    removeAbandoned(target);
    return { staging, target, ready: Promise.resolve(), copy: false };
  }

  /**
   * The staging file of target as a copy of it, for an update (--append) to write into once ready;
   * identity: target's (fileIdentity) when the update read what it adds to (its list of files), which
   * target must still have when the copy is renamed over it (commit), else another import or update
   * replaced it meanwhile and the copy may not be of the file read.
   * The copy runs on a thread of Node's pool, so the caller's work goes on meanwhile (an update
   * reads and checks its new files while the file is copied). Where the file system can (Btrfs,
   * XFS, ZFS with block cloning), the copy shares the blocks until they are written (a reflink)
   * and takes no time; elsewhere the kernel copies the bytes (0.1 to 0.35 s for a file of 350 MB
   * in the page cache, on two cores shared with the update's reading).
   */
  copy(target: string, identity: string): StagedFile {
    this.copied.set(target, identity);
    const files = this.add(target);
    const ready = copyFile(target, files.staging, constants.COPYFILE_FICLONE);
    // Awaited by the caller, and by remove(): never an unhandled rejection.
    this.copies.push(ready.catch(() => undefined));
    return { ...files, ready, copy: true };
  }

  /**
   * Renames every staging file over its target, all or none: every target replaced is first linked
   * under another name (FILE.convx-old-PID-TOKEN-N), so that a rename does not free it and a failed
   * rename can put back the ones renamed before it. Then the old files are removed: a large one by
   * a process of its own (REMOVE_LATER_BYTES), which the command does not wait for.
   */
  commit(): void {
    for (const [target, identity] of this.copied) {
      if (!existsSync(target) || fileIdentity(target) !== identity) throw replacedMeanwhile(target);
    }
    const old = new Map<string, string>();
    const existed = new Set<string>();
    const renamed: string[] = [];
    let renaming: [staging: string, target: string] | undefined;
    try {
      for (const [staging, target] of this.files) {
        const name = `${target}.convx-old-${process.pid}-${TOKEN}-${++replacements}`;
        if (existsSync(target)) {
          existed.add(target);
          keepAccess(target, staging);
        }
        if (linked(target, name)) old.set(target, name);
      }
      for (const [staging, target] of this.files) {
        renaming = [staging, target];
        renameSync(staging, target);
        pending.delete(staging);
        pending.delete(`${staging}.wal`);
        renamed.push(target);
      }
    } catch (error) {
      // The targets renamed over get their old file back; one that did not exist is removed again
      // (one that existed but could not be linked, on a file system without hard links, stays new).
      for (const target of renamed) {
        const name = old.get(target);
        try {
          if (name) renameSync(name, target);
          else if (!existed.has(target)) rmSync(target, { force: true });
          old.delete(target);
        } catch {
          // left as it is: the first error is the one to report
        }
      }
      for (const name of old.values()) removeQuietly(name);
      if (renaming && (error as NodeJS.ErrnoException).code === 'ENOENT' && !existsSync(renaming[0])) throw stagingGone(...renaming);
      throw error;
    }
    removeReplaced([...old.values()]);
  }

  /** Removes the staging files (after any copy into one has ended, so that none is made again after it). */
  async remove(): Promise<void> {
    await Promise.all(this.copies);
    // Called on the way out of a failure: an error here would hide that one.
    for (const [staging] of this.files) {
      for (const file of [staging, `${staging}.wal`]) {
        removeQuietly(file);
        pending.delete(file);
      }
    }
  }
}

/** A staging file removed before it was renamed into place: by another import into the same target that took its name for one of a process gone (removeAbandoned). */
function stagingGone(staging: string, target: string): DataError {
  return new DataError(`cannot write ${target}: its staging file ${basename(staging)} is gone (removed by another import into it, from another container or machine sharing the folder?); nothing was written`, [
    'run the import again once the other one is done',
  ]);
}

/** A file copied to be updated that another import or update replaced before the copy was renamed over it. */
function replacedMeanwhile(target: string): DataError {
  return new DataError(`cannot write ${target}: it was replaced while this update ran (by another update or import into it); nothing was written`, [
    'run the update again once the other one is done',
  ]);
}

/**
 * The file replacing target (an import's, or --output's page, commands/page.ts) gets target's
 * owner and group where this process may give them (root; the group alone where this process is a
 * member of it), and its permissions: a file of contacts'
 * addresses made private (0600), or readable by a server's group (0640), stays so when an import or
 * an update replaces it. Where the group cannot be kept, a mode that let that group read is not
 * copied: on this process's group it would lock the old group out (the new file keeps the mode
 * the process makes files with, as before).
 */
export function keepAccess(target: string, staging: string): void {
  try {
    const was = statSync(target);
    let group = true;
    try {
      chownSync(staging, was.uid, was.gid);
    } catch {
      try {
        chownSync(staging, -1, was.gid);
      } catch {
        group = statSync(staging).gid === was.gid;
      }
    }
    if (group || (was.mode & 0o070) === 0) chmodSync(staging, was.mode & 0o7777);
  } catch {
    // no staging file (its rename fails next), or nothing this process may change
  }
}

/** A second name for target (false where it does not exist or the file system has no hard links). */
function linked(target: string, name: string): boolean {
  try {
    linkSync(target, name);
    return true;
  } catch {
    return false;
  }
}

/** rmSync, its error ignored: what it leaves, the next import into the target removes (removeAbandoned). */
function removeQuietly(file: string): void {
  try {
    rmSync(file, { force: true, recursive: true });
  } catch {
    // left for the next import into the target
  }
}

/** Removes replaced files: the small ones now, the large ones (REMOVE_LATER_BYTES) by `rm` in a process of their own. */
function removeReplaced(files: string[]): void {
  const large = files.filter((file) => {
    try {
      return process.platform !== 'win32' && statSync(file).blocks * 512 >= REMOVE_LATER_BYTES;
    } catch {
      return false;
    }
  });
  for (const file of files) if (!large.includes(file)) removeQuietly(file);
  if (large.length === 0) return;
  try {
    const child = spawn('rm', ['-f', '--', ...large], { detached: true, stdio: 'ignore', windowsHide: true });
    // No rm: removed here, if the process is still running; else by the next import into the target.
    child.on('error', () => large.forEach(removeQuietly));
    child.unref();
  } catch {
    large.forEach(removeQuietly);
  }
}

/** The largest process id of Linux (2^22); a larger number in a name is not one of ours. */
const MAX_PID = 2 ** 22;

/**
 * Staging files (FILE.tmp-PID-TOKEN, its .wal) and replaced files still to remove
 * (FILE.convx-old-PID-TOKEN-N) of imports into the same target whose process is gone: regular files
 * only, named as convx names them (or as a convx before TOKEN did: FILE.tmp-PID, FILE.convx-old-PID-N),
 * with a number that can be a process id. A name of this process's id and not of its token is of an
 * earlier process that had the id (in a container, every run's first process is pid 1), whose
 * files the run that ended left. A process of another PID namespace (a container, the host)
 * importing into the same file at the same time cannot be told from one gone: it loses its staging
 * file, and fails (stagingGone), rather than both writing one file.
 */
function removeAbandoned(into: string): void {
  const name = basename(into);
  let names: string[];
  try {
    names = readdirSync(dirname(into));
  } catch {
    return;
  }
  for (const other of names) {
    if (!other.startsWith(`${name}.`)) continue;
    const match = /^(?:tmp-(\d{1,7})(?:-([0-9a-f]{8}))?(?:\.wal)?|convx-old-(\d{1,7})(?:-([0-9a-f]{8}))?-\d+)$/.exec(other.slice(name.length + 1));
    if (!match) continue;
    const pid = Number(match[1] ?? match[3]);
    const token = match[2] ?? match[4];
    if (!pid || pid > MAX_PID || token === TOKEN || (pid !== process.pid && alive(pid))) continue;
    const file = join(dirname(into), other);
    try {
      if (lstatSync(file).isFile()) rmSync(file, { force: true });
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
}

