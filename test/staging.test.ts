/**
 * The staging files of an import or an update (src/local/staging.ts): renamed over their target
 * once complete, a large replaced file removed by `rm` in a process of its own after the rename
 * (the command does not wait for its blocks to be freed), a copy removed only once it has ended.
 */
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fileIdentity, REMOVE_LATER_BYTES, Staging } from '../src/local/staging.js';
import { tempDir } from './temp.js';

const ROOT = join(import.meta.dirname, '..');

const root = tempDir('convx-staging-');

/** A file of size bytes beginning with the byte first, the rest random (written, and not compressible, so its blocks count, as a DuckDB file's do). */
function filled(file: string, size: number, first: number): void {
  const bytes = randomBytes(size);
  bytes[0] = first;
  writeFileSync(file, bytes);
}

/** The first byte of an open file. */
function firstByte(fd: number): number {
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, 0);
  return b[0]!;
}

async function until(done: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 10));
  return done();
}

/** A PATH whose `rm` logs its arguments to log, then runs the system's rm: shows which files a process of its own removed. */
function loggingRm(dir: string, log: string): string {
  mkdirSync(dir, { recursive: true });
  const rm = join(dir, 'rm');
  writeFileSync(rm, `#!/bin/sh\nprintf '%s\\n' "$@" >> '${log}'\nexec /bin/rm "$@"\n`);
  chmodSync(rm, 0o755);
  return `${dir}:${process.env.PATH}`;
}

const path = process.env.PATH;
afterEach(() => {
  process.env.PATH = path;
});

describe('Staging', () => {
  it.skipIf(process.platform === 'win32')('renames a large replacement over its target at once, and a process of its own removes the old file; a reader of the old file keeps reading it', async () => {
    const dir = join(root, 'large');
    mkdirSync(dir);
    const target = join(dir, 'data.duckdb');
    filled(target, REMOVE_LATER_BYTES, 1);
    const log = join(dir, 'rm.log');
    process.env.PATH = loggingRm(join(dir, 'bin'), log);
    const reader = openSync(target, 'r');
    try {
      const staging = new Staging();
      const { staging: file, ready } = staging.add(target);
      await ready;
      filled(file, 1024, 2);
      staging.commit();
      expect(readFileSync(target)[0]).toBe(2);
      expect(statSync(target).size).toBe(1024);
      expect(firstByte(reader)).toBe(1);
      // Named with this process's id and token: another process's old file of the same target never has the name.
      const removed = () => readFileSync(log, 'utf8').split('\n').filter((line) => new RegExp(`^${target.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.convx-old-${process.pid}-[0-9a-f]{8}-\\d+$`).test(line));
      expect(await until(() => existsSync(log) && removed().length === 1 && !existsSync(removed()[0]!))).toBe(true);
      expect(readdirSync(dir).sort()).toEqual(['bin', 'data.duckdb', 'rm.log']);
    } finally {
      closeSync(reader);
    }
  });

  it('removes a small replaced file itself, before commit returns', async () => {
    const dir = join(root, 'small');
    mkdirSync(dir);
    const target = join(dir, 'data.duckdb');
    filled(target, 4096, 1);
    const log = join(dir, 'rm.log');
    process.env.PATH = loggingRm(join(dir, 'bin'), log);
    const staging = new Staging();
    filled(staging.add(target).staging, 10, 2);
    staging.commit();
    expect(readdirSync(dir).sort()).toEqual(['bin', 'data.duckdb']);
    expect(readFileSync(target)[0]).toBe(2);
  });

  it('without rm, a large replaced file is removed all the same', async () => {
    const dir = join(root, 'no-rm');
    mkdirSync(dir);
    const target = join(dir, 'data.duckdb');
    filled(target, REMOVE_LATER_BYTES, 1);
    process.env.PATH = join(dir, 'nothing-here');
    const staging = new Staging();
    filled(staging.add(target).staging, 10, 2);
    staging.commit();
    expect(await until(() => readdirSync(dir).length === 1)).toBe(true);
    expect(readdirSync(dir)).toEqual(['data.duckdb']);
  });

  it('a rename that fails leaves the target as it was, under its one name', () => {
    const dir = join(root, 'failed');
    mkdirSync(dir);
    const target = join(dir, 'data.duckdb');
    filled(target, 10, 1);
    const staging = new Staging();
    staging.add(target);
    // The staging file was never written (or another import removed it): the rename fails, and says so.
    expect(() => staging.commit()).toThrow(/^cannot write .*data\.duckdb: its staging file data\.duckdb\.tmp-\d+-[0-9a-f]{8} is gone \(removed by another import into it/);
    expect(readdirSync(dir)).toEqual(['data.duckdb']);
    expect(readFileSync(target)[0]).toBe(1);
  });

  it('files staged together are all renamed or none: a rename that fails puts back the files renamed before it, and removes a new one', () => {
    const dir = join(root, 'together');
    mkdirSync(dir);
    const [a, b, c] = ['a.duckdb', 'b.duckdb', 'c.duckdb'].map((name) => join(dir, name)) as [string, string, string];
    filled(a, 10, 1);
    filled(c, 10, 1);
    const staging = new Staging();
    // a replaced and b new are renamed; c's staging file was never written, so its rename fails.
    filled(staging.add(a).staging, 10, 2);
    filled(staging.add(b).staging, 10, 2);
    staging.add(c);
    expect(() => staging.commit()).toThrow(/c\.duckdb\.tmp-\d+-[0-9a-f]{8} is gone/);
    expect(readFileSync(a)[0]).toBe(1);
    expect(existsSync(b)).toBe(false);
    expect(readFileSync(c)[0]).toBe(1);
    expect(readdirSync(dir).sort()).toEqual(['a.duckdb', 'c.duckdb']);
  });

  it('the file replacing a target gets its permissions, and its owner and group where this process may give them', () => {
    const dir = join(root, 'access');
    mkdirSync(dir);
    const target = join(dir, 'data.duckdb');
    filled(target, 10, 1);
    chmodSync(target, 0o600);
    const root0 = process.getuid?.() === 0;
    // As root (CI), another group, as a server's would be: it is kept too.
    if (root0) chownSync(target, process.getuid!(), 65534);
    const staging = new Staging();
    const { staging: file } = staging.add(target);
    filled(file, 10, 2);
    chmodSync(file, 0o644);
    staging.commit();
    expect(statSync(target).mode & 0o777).toBe(0o600);
    if (root0) expect(statSync(target).gid).toBe(65534);
  });

  it.skipIf(process.getuid?.() !== 0)('run by another user: keeps the group where that user is in it, and never narrows a mode on a group it cannot keep', () => {
    // As root, a process of user 65534 commits over files of user 1000: one in a group it is in (its own, 12345), one in another.
    const dir = join(root, 'other-user');
    mkdirSync(dir);
    chmodSync(root, 0o777);
    chmodSync(dir, 0o777);
    const staging = join(ROOT, 'dist', 'local', 'staging.js');
    const commitAs = (name: string, gid: number) => {
      const target = join(dir, name);
      filled(target, 10, 1);
      chownSync(target, 1000, gid);
      chmodSync(target, 0o640);
      const script = `import(${JSON.stringify(staging)}).then(({ Staging }) => { const s = new Staging(); const f = s.add(${JSON.stringify(target)}); require('node:fs').writeFileSync(f.staging, 'new'); s.commit(); })`;
      const run = spawnSync(process.execPath, ['-e', script], { uid: 65534, gid: 12345, encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      return statSync(target);
    };
    const member = commitAs('member.duckdb', 12345);
    expect([member.uid, member.gid, member.mode & 0o777]).toEqual([65534, 12345, 0o640]);
    const stranger = commitAs('stranger.duckdb', 23456);
    // Not its group: the file keeps the process's group, and a mode that let the old group read is not copied onto it.
    expect(stranger.gid).toBe(12345);
    expect(stranger.mode & 0o040).toBe(0o040);
    expect(stranger.mode & 0o004).toBe(0o004);
  });

  it('a copy is the target byte for byte once ready; removed while it runs, nothing is left once remove() returns', async () => {
    const dir = join(root, 'copy');
    mkdirSync(dir);
    const target = join(dir, 'data.duckdb');
    filled(target, REMOVE_LATER_BYTES, 3);
    const first = new Staging();
    const copied = first.copy(target, fileIdentity(target));
    await copied.ready;
    expect(readFileSync(copied.staging).equals(readFileSync(target))).toBe(true);
    await first.remove();
    // Removed at once, while the copy is still running: remove() waits for it to end, so nothing is made again after.
    const second = new Staging();
    const running = second.copy(target, fileIdentity(target));
    await second.remove();
    expect(readdirSync(dir)).toEqual(['data.duckdb']);
    await running.ready;
    expect(readdirSync(dir)).toEqual(['data.duckdb']);
  });

  it('a copy is renamed over its target only while the target is the file it was read of: one replaced meanwhile is refused, and kept', async () => {
    const dir = join(root, 'replaced');
    mkdirSync(dir);
    const target = join(dir, 'data.duckdb');
    writeFileSync(target, 'first');
    const kept = new Staging();
    const copy = kept.copy(target, fileIdentity(target));
    await copy.ready;
    writeFileSync(copy.staging, 'first, updated');
    kept.commit();
    expect(readFileSync(target, 'utf8')).toBe('first, updated');
    // Read (identity taken), then replaced by another writer before the commit.
    const staging = new Staging();
    const read = fileIdentity(target);
    const other = join(dir, 'other');
    writeFileSync(other, 'another update');
    renameSync(other, target);
    const late = staging.copy(target, read);
    await late.ready;
    expect(() => staging.commit()).toThrow(/cannot write .*data\.duckdb: it was replaced while this update ran/);
    await staging.remove();
    expect(readFileSync(target, 'utf8')).toBe('another update');
    expect(readdirSync(dir)).toEqual(['data.duckdb']);
  });

  it('a copy that fails rejects ready, and remove() still returns', async () => {
    const staging = new Staging();
    const { ready } = staging.copy(join(root, 'missing.duckdb'), 'none');
    await expect(ready).rejects.toThrow(/ENOENT/);
    await staging.remove();
  });
});

/**
 * Imports as pid 1 of PID namespaces of their own, as in containers that share a folder (util-linux's
 * `unshare`, as root: CI). Elsewhere (not root) skipped.
 */
const asPid1 = (...argv: string[]) => ['unshare', '--pid', '--fork', '--mount-proc', process.execPath, join(ROOT, 'bin', 'convx.js'), ...argv];
const namespaces = spawnSync(asPid1()[0]!, [...asPid1().slice(1, 5), '-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout === '1';

/** Sends a signal to a process group that may have ended already (ESRCH: nothing left to signal). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

describe.skipIf(!namespaces)('imports in containers sharing a folder (each process pid 1 of its PID namespace)', () => {
  const samples = join(ROOT, 'samples', 'shop');
  const run = (argv: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });
  const report = (file: string) => spawnSync(process.execPath, [join(ROOT, 'bin', 'convx.js'), 'report', '--data', file, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'], { encoding: 'utf8' }).stdout.replace(/"dataVersion": "[^"]*"/, '');

  it("an import removes what an earlier run's pid 1, killed, left beside the file (its pid is this one's, its token another)", async () => {
    const dir = join(root, 'containers-left');
    mkdirSync(dir);
    const file = join(dir, 'shop.duckdb');
    for (const name of ['tmp-1-deadbeef', 'tmp-1-deadbeef.wal', 'convx-old-1-deadbeef-1', 'tmp-1']) writeFileSync(`${file}.${name}`, 'left');
    const done = await run(asPid1('data', 'import', samples, '--into', file));
    expect(done.code, done.stderr).toBe(0);
    expect(readdirSync(dir)).toEqual(['shop.duckdb']);
  });

  it('two imports into one file at once, both pid 1: the later one takes the earlier one\'s staging file for a gone run\'s, and the earlier one says so, the file whole', async () => {
    const dir = join(root, 'containers-both');
    mkdirSync(dir);
    const file = join(dir, 'shop.duckdb');
    const expected = report(samples);
    expect(expected).toMatch(/"conversions"/);
    // The first import is stopped (SIGSTOP to its process group) once its staging file is there, the second runs whole meanwhile.
    let caught = false;
    for (let round = 0; round < 5 && !caught; round++) {
      const argv = asPid1('data', 'import', samples, '--into', file, '--force');
      const first = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
      let stderr = '';
      first.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const ended = new Promise<number | null>((resolve) => first.on('close', resolve));
      let exited = false;
      void ended.then(() => (exited = true));
      while (!exited && !readdirSync(dir).some((f) => /^shop\.duckdb\.tmp-1-[0-9a-f]{8}$/.test(f))) await new Promise((resolve) => setImmediate(resolve));
      if (exited) continue;
      // The group may be gone by the signal: the first import ended (or was ending) as its file came.
      signalGroup(first.pid!, 'SIGSTOP');
      const second = await run(asPid1('data', 'import', samples, '--into', file, '--force'));
      signalGroup(first.pid!, 'SIGCONT');
      const code = await ended;
      expect(second.code, second.stderr).toBe(0);
      // Stopped before its rename: its staging file was taken for a gone run's; stopped after it (at the very end): done.
      if (code !== 0) {
        caught = true;
        expect(code, stderr).toBe(2);
        expect(stderr).toMatch(/cannot write .*shop\.duckdb: its staging file shop\.duckdb\.tmp-1-[0-9a-f]{8} is gone \(removed by another import into it/);
      }
      expect(report(file)).toBe(expected);
      expect(await until(() => readdirSync(dir).length === 1)).toBe(true);
    }
    expect(caught).toBe(true);
  });
});
