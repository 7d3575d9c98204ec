/**
 * Where results go, as the built binary (bin/convx.js) writes them: stdout that cannot be written
 * (/dev/full as a shell's redirect: "cannot write the output", exit 2, no stack; a closed pipe:
 * exit 0).
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SAMPLES } from './helpers.js';

const bin = join(import.meta.dirname, '..', 'bin', 'convx.js');
const PERIOD = ['--from', '2024-03-01', '--to', '2024-03-31'];

/** convx ARGS run by sh with REDIRECT applied to it (`> /dev/full`, `>> FILE`); its stdout and stderr captured otherwise. */
function convx(args: string[], redirect = '') {
  const result = spawnSync('sh', ['-c', `exec "$0" "$@" ${redirect}`, process.execPath, bin, ...args], { encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe.skipIf(process.platform !== 'linux')('a failed write to stdout', () => {
  it('is "cannot write the output", exit 2 (not validate\'s 1), never a stack: a table, csv, jsonl --all, a card, sarif, --help', () => {
    const runs = [
      ['report', '--data', SAMPLES, ...PERIOD, '-o', 'csv'],
      ['report', '--data', SAMPLES, ...PERIOD, '-o', 'table'],
      ['items', '--data', SAMPLES, ...PERIOD, '--all', '-o', 'jsonl'],
      ['order', 'o-2', '--data', SAMPLES],
      ['validate', join(SAMPLES, '..', 'deliveries', 'welcome.json'), '--data', SAMPLES, '-o', 'sarif'],
      ['--help'],
    ];
    for (const args of runs) {
      const full = convx(args, '> /dev/full');
      expect(full.stderr, args.join(' ')).toBe('convx: error: cannot write the output: no space left on the device\n');
      expect(full.status, args.join(' ')).toBe(2);
    }
  });

  it('a closed pipe (convx … | head) ends it quietly with 0', async () => {
    const child = spawn(process.execPath, [bin, 'items', '--data', SAMPLES, ...PERIOD, '--all', '-o', 'jsonl'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
