import { mkdtempSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const created: string[] = [];

/** A RAM-backed folder for the suite's files where there is one with room (/dev/shm on Linux; Docker's default of 64 MB is too small, and noexec). */
const SHM = '/dev/shm';
const TMPFS_MAGIC = 0x01021994;

/**
 * Where the suite's temporary directories go: CONVX_TEST_TMPDIR when set, else a tmpfs /dev/shm
 * with a gigabyte free that may hold programs (tests run scripts they write), else the system's.
 * The suite writes and removes thousands of small files (datasets, imports, their staging
 * copies); on a busy ext4 /tmp creating each costs a search for a free inode, about a tenth of an
 * import test's CPU, which a tmpfs does not spend. Every test still reads and writes real files
 * through the same calls.
 */
function base(): string {
  if (process.env.CONVX_TEST_TMPDIR) return process.env.CONVX_TEST_TMPDIR;
  try {
    const fs = statfsSync(SHM);
    const mount = readFileSync('/proc/mounts', 'utf8').split('\n').find((line) => line.split(' ')[1] === SHM);
    const noexec = mount?.split(' ')[3]?.split(',').includes('noexec') ?? true;
    if (fs.type === TMPFS_MAGIC && fs.bavail * fs.bsize >= 2 ** 30 && !noexec) return SHM;
  } catch {
    // no /dev/shm
  }
  return tmpdir();
}

/** The folder the suite's temporary directories are made in (see base). */
const TEMP_BASE = base();

/** A new temporary directory, removed after the test file (test/setup.ts). */
export function tempDir(prefix = 'convx-test-'): string {
  const dir = mkdtempSync(join(TEMP_BASE, prefix));
  created.push(dir);
  return dir;
}

/** Removes the directories tempDir made so far. */
export function removeTempDirs(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}
