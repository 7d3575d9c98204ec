/**
 * Where results go: stdout that cannot be written (/dev/full: "cannot write the output", exit 2, no
 * stack; a closed pipe: exit 0, validate its verdict), and what --output and --update-baseline name (a
 * regular file replaced whole, a symbolic link written through, a FIFO or /dev/stdout written into, a
 * folder or a socket refused). The built binary (bin/convx.js) where the process is the point: its
 * stdout a real /dev/full or a real pipe whose reader is gone (one run for each way a write reaches
 * the process's stdout: commander's help, a command's results, validate's verdict), and the
 * descriptors a shell opened for it (>>, 3>>). Every other case runs in process (cli(), with its
 * stdout a real /dev/full or a stream failing as a closed pipe does, EPIPE): the same code of
 * src/ decides them, at a twentieth of the CPU of a process each.
 */
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { chmodSync, createWriteStream, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { SAMPLES, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const bin = join(import.meta.dirname, '..', 'bin', 'convx.js');
const PERIOD = ['--from', '2024-03-01', '--to', '2024-03-31'];
const PAGE = ['report', '--data', SAMPLES, ...PERIOD, '-o', 'html'];
const DELIVERIES = join(SAMPLES, '..', 'deliveries');

/** convx ARGS run by sh with REDIRECT applied to it (`> /dev/full`, `>> FILE`); its stdout and stderr captured otherwise. */
function convx(args: string[], redirect = '') {
  const result = spawnSync('sh', ['-c', `exec "$0" "$@" ${redirect}`, process.execPath, bin, ...args], { encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** convx in process, samples/shop opened once for the commands on it (kept-backends.ts). */
const kept = keptBackends();

/** convx ARGS in process with its stdout a real /dev/full (every write fails with ENOSPC); its code and stderr. */
async function intoDevFull(args: string[]): Promise<{ code: number; stderr: string }> {
  // as bin/convx.js does with process.stdout: the failure reaches the write's callback; the 'error' event must not throw
  const full = createWriteStream('/dev/full').on('error', () => undefined);
  try {
    const { code, stderr } = await kept(args, { stdout: full });
    return { code, stderr };
  } finally {
    full.destroy();
  }
}

/** convx ARGS in process with its stdout's reader gone: every write fails with EPIPE, as a closed pipe's does (`convx … | head` whose head has ended). */
async function intoClosedPipe(args: string[]): Promise<{ code: number; stderr: string }> {
  const epipe = () => Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });
  const stdout = new Writable({ write: (_chunk, _encoding, done) => done(epipe()) }).on('error', () => undefined);
  const { code, stderr } = await kept(args, { stdout });
  return { code, stderr };
}

/** The page of PAGE as stdout gets it (the same bytes on every run: made once). */
let made: string | undefined;
async function page(): Promise<string> {
  return (made ??= (await kept(PAGE)).stdout);
}

describe.skipIf(process.platform !== 'linux')('a failed write to stdout', () => {
  it('is "cannot write the output", exit 2 (not validate\'s 1), never a stack: a table, csv, jsonl --all, a card, sarif, --help', async () => {
    const runs = [
      ['report', '--data', SAMPLES, ...PERIOD, '-o', 'csv'],
      ['report', '--data', SAMPLES, ...PERIOD, '-o', 'table'],
      ['items', '--data', SAMPLES, ...PERIOD, '--all', '-o', 'jsonl'],
      ['order', 'o-2', '--data', SAMPLES],
      ['validate', join(DELIVERIES, 'welcome.json'), '--data', SAMPLES, '-o', 'sarif'],
      ['--help'],
    ];
    const expected = { code: 2, stderr: 'convx: error: cannot write the output: no space left on the device\n' };
    for (const args of runs) expect(await intoDevFull(args), args.join(' ')).toEqual(expected);
    // The binary, its stdout the shell's redirect to /dev/full: a command's results and commander's help.
    for (const args of [runs[0]!, runs[5]!]) {
      const full = convx(args, '> /dev/full');
      expect({ code: full.status, stderr: full.stderr }, args.join(' ')).toEqual(expected);
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
    // in process, every write failing as the pipe's did: the same
    expect(await intoClosedPipe(['items', '--data', SAMPLES, ...PERIOD, '--all', '-o', 'jsonl'])).toEqual({ code: 0, stderr: '' });
  });
});

/** The built convx ARGS with its stdout's reader gone before anything is written (`convx … | head` whose head has ended). */
async function closedPipe(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stderr };
}

describe.skipIf(process.platform !== 'linux')('validate with a closed pipe (convx validate … | head in a CI step with pipefail)', () => {
  it('still ends with its verdict, and says why on stderr, in every format: one request or several', async () => {
    const unknown = join(DELIVERIES, 'defect-unknown-asset.json');
    const verdict = { code: 1, stderr: 'convx: not ready: 1 error (asset_not_found)\n' };
    // the binary on a real pipe
    expect(await closedPipe(['validate', unknown, '--data', SAMPLES, '-o', 'json'])).toEqual(verdict);
    for (const format of ['json', 'table', 'github', 'junit', 'sarif']) {
      expect(await intoClosedPipe(['validate', unknown, '--data', SAMPLES, '-o', format]), format).toEqual(verdict);
    }
    const several = await intoClosedPipe(['validate', join(DELIVERIES, 'welcome.json'), unknown, '--data', SAMPLES, '-o', 'json']);
    expect(several).toEqual({ code: 1, stderr: `convx: not ready: ${unknown}: 1 error (asset_not_found)\n` });
    // a request that cannot be read: 2, its error said
    const dir = tempDir();
    writeFileSync(join(dir, 'broken.json'), '{');
    const broken = await intoClosedPipe(['validate', join(dir, 'broken.json'), join(DELIVERIES, 'welcome.json'), '--data', SAMPLES, '-o', 'junit']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/^convx: error: .*broken\.json/);
    // a ready delivery: 0, nothing said
    expect(await intoClosedPipe(['validate', join(DELIVERIES, 'welcome.json'), '--data', SAMPLES, '-o', 'json'])).toEqual({ code: 0, stderr: '' });
  });

  it('a baseline\'s verdict too; --update-baseline still writes its file', async () => {
    const dir = tempDir();
    const base = join(dir, 'base.json');
    const welcome = join(DELIVERIES, 'welcome.json');
    const updated = await intoClosedPipe(['validate', welcome, '--data', SAMPLES, '--baseline', base, '--update-baseline', '-o', 'json']);
    expect(updated).toEqual({ code: 0, stderr: `wrote the baseline ${base}\n` });
    expect(readFileSync(base, 'utf8')).toBe((await kept(['validate', welcome, '--data', SAMPLES, '-o', 'json'])).stdout);
    // a new finding since the baseline fails the run, pipe or not
    const request = join(dir, 'request.json');
    writeFileSync(request, JSON.stringify({ ...JSON.parse(readFileSync(welcome, 'utf8')), assets: [{ assetId: 'welcome-cs' }, { assetId: 'welcome-en' }, { assetId: 'nope' }] }));
    const failed = await intoClosedPipe(['validate', request, '--data', SAMPLES, '--baseline', base, '-o', 'sarif']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^convx: not ready: .*new finding.* since the baseline /);
  });
});

describe.skipIf(process.platform !== 'linux')('--output and --update-baseline', () => {
  it('a symbolic link is written through: the file it points to replaced (its permissions kept), the link kept', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'real'));
    const target = join(dir, 'real', 'target.html');
    writeFileSync(target, 'old');
    chmodSync(target, 0o600);
    symlinkSync('real/target.html', join(dir, 'link.html'));
    const written = await kept([...PAGE, '--output', join(dir, 'link.html')]);
    expect(written.stderr).toBe(`wrote ${join(dir, 'link.html')}\n`);
    expect(written.code).toBe(0);
    expect(lstatSync(join(dir, 'link.html')).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe(await page());
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).sort()).toEqual(['link.html', 'real']);
    expect(readdirSync(join(dir, 'real'))).toEqual(['target.html']);
  });

  it('a link to nothing, a folder and a socket are refused (exit 2), nothing made', async () => {
    const dir = tempDir();
    symlinkSync('nowhere.html', join(dir, 'dangling.html'));
    const dangling = await kept([...PAGE, '--output', join(dir, 'dangling.html')]);
    expect(dangling.code).toBe(2);
    expect(dangling.stderr).toMatch(/^convx: error: --output .*dangling\.html is a symbolic link to a file that does not exist\n/);
    mkdirSync(join(dir, 'folder.html'));
    const folder = await kept([...PAGE, '--output', join(dir, 'folder.html')]);
    expect(folder.code).toBe(2);
    expect(folder.stderr).toMatch(/^convx: error: --output: cannot write .*folder\.html: it is a folder\n/);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(dir, 'socket'), resolve));
    try {
      const socket = await kept([...PAGE, '--output', join(dir, 'socket')]);
      expect(socket.code).toBe(2);
      expect(socket.stderr).toMatch(/^convx: error: --output: cannot write .*socket: it is a socket\n/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(readdirSync(dir).sort()).toEqual(['dangling.html', 'folder.html']);
    expect(readdirSync(join(dir, 'folder.html'))).toEqual([]);
  });

  it('a FIFO is written into (its reader gets the page), and stays a FIFO', async () => {
    const dir = tempDir();
    const fifo = join(dir, 'page.fifo');
    execFileSync('mkfifo', [fifo]);
    const reader = spawn('cat', [fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    reader.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    const read = new Promise((resolve) => reader.on('close', resolve));
    try {
      const { code, stderr } = await kept([...PAGE, '--output', fifo]);
      expect({ code, stderr }).toEqual({ code: 0, stderr: `wrote ${fifo}\n` });
      expect(lstatSync(fifo).isFIFO()).toBe(true);
      await read;
      expect(Buffer.concat(chunks).toString('utf8')).toBe(await page());
    } finally {
      // a FIFO nobody opened leaves its reader waiting
      reader.kill();
    }
  });

  it('/dev/stdout is written into: a pipe, or a file the shell appends to, kept and added to', async () => {
    expect((await kept([...PAGE, '--output', '/dev/stdout'])).stdout).toBe(await page());
    // the binary: its stdout a file the shell opened to append to (opened again by name, it would be truncated)
    const dir = tempDir();
    const log = join(dir, 'log');
    writeFileSync(log, 'kept\n');
    const inode = statSync(log).ino;
    const appended = convx([...PAGE, '--output', '/dev/stdout'], `>> '${log}'`);
    expect(appended.status).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe(`kept\n${await page()}`);
    expect(statSync(log).ino).toBe(inode);
    expect(readdirSync(dir)).toEqual(['log']);
  });

  it('another open descriptor (/dev/fd/3, a file the shell opened to append to) is written into, the file kept and added to', async () => {
    const dir = tempDir();
    const log = join(dir, 'log');
    writeFileSync(log, 'kept\n');
    const inode = statSync(log).ino;
    const written = convx([...PAGE, '--output', '/dev/fd/3'], `3>> '${log}'`);
    expect(written.stderr).toBe('wrote /dev/fd/3\n');
    expect(written.status).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe(`kept\n${await page()}`);
    expect(statSync(log).ino).toBe(inode);
    expect(readdirSync(dir)).toEqual(['log']);
  });

  // mknod needs root (CI runs as root): a character device of its own, so that a wrong replace cannot touch /dev/null.
  it.skipIf(process.getuid?.() !== 0)('a character device (a null device of its own) is written into, and stays a device', async () => {
    const dir = tempDir();
    const device = join(dir, 'null');
    execFileSync('mknod', [device, 'c', '1', '3']);
    const written = await kept([...PAGE, '--output', device]);
    expect(written.stderr).toBe(`wrote ${device}\n`);
    expect(written.code).toBe(0);
    expect(lstatSync(device).isCharacterDevice()).toBe(true);
    expect(readdirSync(dir)).toEqual(['null']);
  });

  it('--update-baseline writes through a symbolic link too', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'real'));
    const request = join(DELIVERIES, 'welcome.json');
    const json = (await kept(['validate', request, '--data', SAMPLES, '-o', 'json'])).stdout;
    // on one line: the update writes it again as convx writes JSON
    writeFileSync(join(dir, 'real', 'b.json'), JSON.stringify(JSON.parse(json)));
    symlinkSync('real/b.json', join(dir, 'b.json'));
    const updated = await kept(['validate', request, '--data', SAMPLES, '--baseline', join(dir, 'b.json'), '--update-baseline']);
    expect(updated.code).toBe(0);
    expect(updated.stderr).toContain(`wrote the baseline ${join(dir, 'b.json')}`);
    expect(lstatSync(join(dir, 'b.json')).isSymbolicLink()).toBe(true);
    // written through the link: the file it points to holds the result (the same as -o json: no sample's HTML here)
    const baseline = readFileSync(join(dir, 'real', 'b.json'), 'utf8');
    expect(baseline).toBe(json);
    expect(JSON.parse(baseline)).toBeTypeOf('object');
    expect(readdirSync(join(dir, 'real'))).toEqual(['b.json']);
  });
});
