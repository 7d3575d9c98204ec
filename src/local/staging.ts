/**
 * Files written under a staging name beside their target (FILE.tmp-PID) and renamed over it once
 * complete: an import (import-writer.ts) and an update (`--append`, append/update.ts) write this
 * way, so that a failed or killed one replaces nothing and a server keeps reading the old file.
 * Node's file calls only: no DuckDB.
 */
import { spawn } from 'node:child_process';
import { constants, linkSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** A staging file and the file it becomes; ready: resolves once the staging file may be written (a copy complete). */
export interface StagedFile {
  staging: string;
  target: string;
  ready: Promise<void>;
}

/**
 * A replaced file this large is removed by a process of its own after the rename, not by the
 * command: the last unlink of a file frees its blocks and drops its pages from the page cache,
 * some 70 ms for the 350 MB of the bench's 2M orders on ext4, a twelfth of an update's time.
 * Below it the unlink costs less than starting that process.
 */
export const REMOVE_LATER_BYTES = 64 * 2 ** 20;

/**
 * The files of one import, staged together: every one renamed into place once all are complete,
 * or all removed. Staging files (and old files still to be removed) that a process now gone left
 * behind (killed, crashed) are removed on the way.
 */
export class Staging {
  private readonly files: [staging: string, target: string][] = [];
  private readonly copies: Promise<void>[] = [];

  add(target: string): StagedFile {
    const staging = `${target}.tmp-${process.pid}`;
    this.files.push([staging, target]);
    for (const file of [staging, `${staging}.wal`]) rmSync(file, { force: true });
    removeAbandoned(target);
    return { staging, target, ready: Promise.resolve() };
  }

  /**
   * The staging file of target as a copy of it, for an update (--append) to write into once ready.
   * The copy runs on a thread of Node's pool, so the caller's work goes on meanwhile (an update
   * reads and checks its new files while the file is copied). Where the file system can (Btrfs,
   * XFS, ZFS with block cloning), the copy shares the blocks until they are written (a reflink)
   * and takes no time; elsewhere the kernel copies the bytes (about 0.1 s for a file of 350 MB in
   * the page cache).
   */
  copy(target: string): StagedFile {
    const files = this.add(target);
    const ready = copyFile(target, files.staging, constants.COPYFILE_FICLONE);
    // Awaited by the caller, and by remove(): never an unhandled rejection.
    this.copies.push(ready.catch(() => undefined));
    return { ...files, ready };
  }

  /**
   * Renames every staging file over its target. A target replaced stays linked under another name
   * (FILE.old-PID) until the renames are done, so that a rename does not free it; a large one is
   * then removed by a process of its own (REMOVE_LATER_BYTES), which the command does not wait for.
   */
  commit(): void {
    const replaced: string[] = [];
    try {
      for (const [staging, target] of this.files) {
        const old = `${target}.old-${process.pid}`;
        rmSync(old, { force: true });
        if (linked(target, old)) replaced.push(old);
        renameSync(staging, target);
      }
    } finally {
      removeReplaced(replaced);
    }
  }

  /** Removes the staging files (after any copy into one has ended, so that none is made again after it). */
  async remove(): Promise<void> {
    await Promise.all(this.copies);
    for (const [staging] of this.files) for (const file of [staging, `${staging}.wal`]) rmSync(file, { force: true });
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

/** Removes replaced files: the small ones now, the large ones (REMOVE_LATER_BYTES) by `rm` in a process of their own. */
function removeReplaced(files: string[]): void {
  const large = files.filter((file) => {
    try {
      return statSync(file).blocks * 512 >= REMOVE_LATER_BYTES;
    } catch {
      return false;
    }
  });
  for (const file of files) if (!large.includes(file)) rmSync(file, { force: true });
  if (large.length === 0) return;
  try {
    const child = spawn('rm', ['-f', '--', ...large], { detached: true, stdio: 'ignore' });
    // No rm (Windows): removed here, if the process is still running; else by the next import into the file.
    child.on('error', () => large.forEach((file) => rmSync(file, { force: true })));
    child.unref();
  } catch {
    for (const file of large) rmSync(file, { force: true });
  }
}

/** Staging files (FILE.tmp-PID, its .wal) and replaced files (FILE.old-PID) of imports into the same target whose process is gone. */
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
    const pid = Number(/^(?:tmp-(\d+)(?:\.wal)?|old-(\d+))$/.exec(other.slice(name.length + 1))?.slice(1).find(Boolean));
    if (!pid || pid === process.pid || alive(pid)) continue;
    rmSync(join(dirname(into), other), { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, owned by someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
