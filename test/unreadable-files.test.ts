/**
 * A dataset convx may not read: its folder, a table's folder or a table's file without read
 * permission is an input error (exit 2) that names it and says why, in every command that reads a
 * dataset, never an unexpected error or a line of a file said to break off. Permissions bind every
 * user but root, so the suite's root runs these commands as nobody (setpriv, of util-linux); any
 * other user runs them as itself, the modes below denying the owner too.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const BIN = join(import.meta.dirname, '..', 'bin', 'convx.js');
const SAMPLES = join(import.meta.dirname, '..', 'samples', 'shop');
const root = process.getuid?.() === 0;
const setpriv = root && spawnSync('setpriv', ['--version']).status === 0;

/** No read for anyone (a folder: still passed through, by its owner too). */
const NO_READ_FOLDER = 0o311;
const NO_READ_FILE = 0o200;

const home = tempDir('convx-unreadable-home-');
const restore: [string, number][] = [];

/** A copy of the samples readable by anyone, but `denied` (paths in it) made unreadable. */
function samplesWith(denied: Record<string, number> = {}): string {
  const dir = tempDir('convx-unreadable-');
  cpSync(SAMPLES, dir, { recursive: true });
  // mkdtemp's folder is its owner's alone: nobody must reach the dataset in it
  chmodSync(dir, 0o755);
  for (const [path, mode] of Object.entries(denied)) {
    chmodSync(join(dir, path), mode);
    restore.push([join(dir, path), 0o755]);
  }
  return dir;
}

// The temporary folders are removed after the file: by a user who may read them again.
afterAll(() => {
  for (const [path, mode] of restore) chmodSync(path, mode);
});

function convx(args: string[]): { code: number | null; stderr: string } {
  const [command, ...rest] = setpriv
    ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, ...args]
    : [process.execPath, BIN, ...args];
  chmodSync(home, 0o777);
  const run = spawnSync(command!, rest, { encoding: 'utf8', env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), NO_COLOR: '1' } });
  return { code: run.status, stderr: run.stderr };
}

describe.skipIf(root && !setpriv)('a dataset convx may not read', () => {
  it("the dataset's folder: every command that reads it says so (exit 2)", () => {
    const dir = samplesWith({ '.': NO_READ_FOLDER });
    for (const args of [
      ['report', '--data', dir, '--month', '2024-03'],
      ['data', 'check', dir],
      ['data', 'import', dir, '--into', join(home, 'shop.duckdb')],
      ['validate', join(SAMPLES, '..', 'deliveries', 'welcome.json'), '--data', dir],
    ]) {
      const run = convx(args);
      expect([run.code, run.stderr], args.join(' ')).toEqual([2, `convx: error: cannot read the dataset's folder ${dir}: permission denied\n`]);
    }
  });

  it("a table's file and a table's folder: named, with why", () => {
    const file = samplesWith({ 'touches.csv': NO_READ_FILE });
    const run = convx(['report', '--data', file, '--month', '2024-03']);
    expect([run.code, run.stderr]).toEqual([2, `convx: error: the dataset at ${file} holds files that cannot be read:\n  touches.csv cannot be read: permission denied\n`]);

    const folder = samplesWith();
    const orders = join(folder, 'orders');
    cpSync(join(folder, 'orders.csv'), join(orders, '2024.csv'));
    spawnSync('rm', [join(folder, 'orders.csv')]);
    chmodSync(orders, NO_READ_FOLDER);
    restore.push([orders, 0o755]);
    const refused = convx(['items', '--data', folder, '--month', '2024-03']);
    expect([refused.code, refused.stderr]).toEqual([2, `convx: error: the dataset at ${folder} holds files that cannot be read:\n  orders/ cannot be read: permission denied\n`]);
  });

  it("a hidden file of a table's folder (DuckDB's glob reads it) and an imported .duckdb file", () => {
    const folder = samplesWith();
    const orders = join(folder, 'orders');
    cpSync(join(folder, 'orders.csv'), join(orders, '2024.csv'));
    cpSync(join(folder, 'orders.csv'), join(orders, '.late.csv'));
    spawnSync('rm', [join(folder, 'orders.csv')]);
    chmodSync(join(orders, '.late.csv'), NO_READ_FILE);
    const hidden = convx(['report', '--data', folder, '--month', '2024-03']);
    expect([hidden.code, hidden.stderr]).toEqual([2, `convx: error: the dataset at ${folder} holds files that cannot be read:\n  orders/.late.csv cannot be read: permission denied\n`]);

    const file = join(samplesWith(), 'shop.duckdb');
    expect(spawnSync(process.execPath, [BIN, 'data', 'import', SAMPLES, '--into', file, '--quiet'], { env: { ...process.env, HOME: home } }).status).toBe(0);
    chmodSync(file, NO_READ_FILE);
    const imported = convx(['report', '--data', file, '--month', '2024-03']);
    expect([imported.code, imported.stderr]).toEqual([2, `convx: error: cannot read ${file}: permission denied\n`]);
  });
});
