/**
 * V8's code cache of the bundle (bin/compile-cache.cjs, made by scripts/compile-cache.cjs at each
 * build): the build leaves one for the files a start and a report load, none for a file that
 * imports an ES module; a start takes the bundle's code from it and prints what it prints without
 * it, from a copy with other file times too (npm's install); a file of another length or text, a
 * blob missing or damaged, a cache of another V8 or NODE_DISABLE_COMPILE_CACHE: compiled from the
 * source as Node does, with the same output.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SAMPLES, tempDir } from './helpers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const bin = join(root, 'bin', 'convx.js');
const run = promisify(execFile);

type Manifest = { v8: string; node: string; files: Record<string, { length: number; crc32: number; blob: string }> };
type Meta = Record<string, { modules: string[]; packages: string[]; dynamicImport: boolean }>;
const manifestOf = (folder: string) => JSON.parse(readFileSync(join(folder, 'compile-cache', 'manifest.json'), 'utf8')) as Manifest;
const META = JSON.parse(readFileSync(join(dist, 'bundle-meta.json'), 'utf8')) as Meta;

/** The environment of a child: the suite's, without a switch of the cache. */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { NODE_DISABLE_COMPILE_CACHE: _, ...rest } = process.env;
  return { ...rest, NO_COLOR: '1', ...extra };
}

/**
 * Runs argv through the bundle in `folder` (a dist/) in a child, the cache installed as
 * bin/convx.js installs it: its stdout, and how each file of the bundle was compiled (undefined:
 * no usable cache).
 */
async function throughCache(folder: string, argv: string[], extra: Record<string, string> = {}): Promise<{ stdout: string; compiled: Record<string, string> | undefined }> {
  const script = `
    const compiled = require(${JSON.stringify(join(root, 'bin', 'compile-cache.cjs'))}).install(${JSON.stringify(folder)});
    const { run } = require(${JSON.stringify(join(folder, 'convx.cjs'))});
    const io = { stdin: process.stdin, stdinIsTTY: false, stdout: process.stdout, stderr: process.stderr, stdoutIsTTY: false, stderrIsTTY: false,
      env: process.env, cwd: process.cwd(), now: () => new Date(), onSignal: () => () => undefined };
    run(${JSON.stringify(argv)}, io).then((code) => { process.stderr.write('\\n' + JSON.stringify({ code, compiled }) + '\\n'); process.exitCode = code; });`;
  const { stdout, stderr } = await run(process.execPath, ['-e', script], { env: env(extra), maxBuffer: 1 << 26 });
  const last = JSON.parse(stderr.trim().split('\n').at(-1)!) as { code: number; compiled?: Record<string, string> };
  expect(last.code).toBe(0);
  return { stdout, compiled: last.compiled };
}

const REPORT = ['report', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'];

describe('the code cache of the bundle', () => {
  it('is made by the build for the files a start and a report load, by this V8, and for no file that imports an ES module', () => {
    const manifest = manifestOf(dist);
    expect(manifest.v8).toBe(process.versions.v8);
    const cached = Object.keys(manifest.files);
    for (const [name, { length, crc32: text, blob }] of Object.entries(manifest.files)) {
      expect(readFileSync(join(dist, name), 'utf8').length, name).toBe(length);
      expect(crc32(readFileSync(join(dist, name), 'utf8')), name).toBe(text);
      expect(existsSync(join(dist, 'compile-cache', blob)), blob).toBe(true);
    }
    const holding = (test: (entry: Meta[string]) => boolean) => Object.keys(META).filter((name) => test(META[name]!));
    // the start (convx.cjs and the chunk of cli.js), DuckDB's JavaScript and the report's handler
    expect(cached).toEqual(expect.arrayContaining(['convx.cjs', ...holding((m) => m.modules.includes('cli.js') || m.modules.includes('commands/report.js') || m.packages.includes('@duckdb/node-api'))]));
    const importing = holding((m) => m.dynamicImport);
    // chalk and @inquirer/prompts, ES modules, are imported: their importers are compiled as Node does
    expect(importing.length).toBeGreaterThan(0);
    for (const name of importing) expect(cached, name).not.toContain(name);
    for (const name of importing) expect(readFileSync(join(dist, name), 'utf8')).toMatch(/\bimport\(/);
  });

  it('a start takes the bundle from it and prints what a start without it prints: the help, a report, a coloured table (chalk, imported)', async () => {
    const help = await throughCache(dist, ['--help']);
    const report = await throughCache(dist, REPORT);
    for (const { compiled } of [help, report]) {
      expect(compiled).toBeDefined();
      // every file from the cache but those that import an ES module (output/no-color.ts's chunk imports chalk where it paints)
      const expected = Object.fromEntries(Object.keys(compiled!).map((name) => [name, META[name]!.dynamicImport ? 'source' : 'cached']));
      expect(compiled).toEqual(expected);
      expect(Object.values(compiled!).filter((how) => how === 'cached').length).toBeGreaterThan(2);
    }
    // the report's handler and DuckDB's JavaScript came from the cache too
    expect(Object.keys(report.compiled!).length).toBeGreaterThan(Object.keys(help.compiled!).length);
    const plain = { env: env({ NODE_DISABLE_COMPILE_CACHE: '1' }), maxBuffer: 1 << 26 };
    // bin/convx.js installs it: V8 takes the code of several files (counted by a preload around vm.Script)
    const preload = join(tempDir('convx-compile-cache-'), 'count.cjs');
    writeFileSync(preload, `const vm = require('node:vm');
      const Script = vm.Script; let taken = 0;
      vm.Script = class extends Script { constructor(code, options) { super(code, options); if (options && options.cachedData && !this.cachedDataRejected) taken++; } };
      process.on('exit', () => process.stderr.write('taken ' + taken + '\\n'));`);
    const counted = async (extra: Record<string, string>) => (await run(process.execPath, ['-r', preload, bin, ...REPORT], { env: env(extra), maxBuffer: 1 << 26 })).stderr;
    expect(await counted({})).toMatch(new RegExp(`^taken ${Object.values(report.compiled!).filter((how) => how === 'cached').length}$`, 'm'));
    expect(await counted({ NODE_DISABLE_COMPILE_CACHE: '1' })).toMatch(/^taken 0$/m);
    expect(help.stdout).toBe((await run(process.execPath, [bin, '--help'], plain)).stdout);
    expect(report.stdout).toBe((await run(process.execPath, [bin, ...REPORT], plain)).stdout);
    expect(JSON.parse(report.stdout).conversions.length).toBeGreaterThan(2);
    // FORCE_COLOR: chalk is imported (import() of an ES module) by a file compiled as Node does
    const table = ['report', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'table'];
    const coloured = await run(process.execPath, [bin, ...table], { env: env({ FORCE_COLOR: '1', NO_COLOR: '' }), maxBuffer: 1 << 26 });
    expect(coloured.stdout).toContain('\u001b[');
    const uncoloured = await run(process.execPath, [bin, ...table], { ...plain, env: env({ FORCE_COLOR: '1', NO_COLOR: '', NODE_DISABLE_COMPILE_CACHE: '1' }) });
    expect(coloured.stdout).toBe(uncoloured.stdout);
  });

  it('a copy with other file times (as npm installs a package) takes it; a file of another length or text, a blob missing or damaged: compiled from the source; under other V8 flags one blob read; a cache of another V8, or NODE_DISABLE_COMPILE_CACHE: none used', async () => {
    const copy = join(tempDir('convx-compile-cache-'), 'dist');
    cpSync(dist, copy, { recursive: true, filter: (path) => !path.includes(`${join(dist, 'validation')}`) });
    // the version a start reads
    cpSync(join(root, 'package.json'), join(copy, '..', 'package.json'));
    // the time npm gives every file of a package it installs (a copy's times differ too): the cache is kept by the files' text, not their time
    const npmTime = new Date('1985-10-26T08:15:00Z');
    for (const name of readdirSync(copy)) if (name.endsWith('.cjs')) utimesSync(join(copy, name), npmTime, npmTime);
    const expected = (await throughCache(dist, ['--help'])).stdout;
    const manifest = manifestOf(copy);
    const startup = Object.keys(META).find((name) => META[name]!.modules.includes('cli.js'))!;
    const installed = await throughCache(copy, ['--help']);
    expect(installed.stdout).toBe(expected);
    expect(installed.compiled).toEqual(Object.fromEntries(Object.keys(installed.compiled!).map((name) => [name, META[name]!.dynamicImport ? 'source' : 'cached'])));
    expect(installed.compiled![startup]).toBe('cached');
    const runtime = Object.keys(installed.compiled!).find((name) => name !== startup && name !== 'convx.cjs' && !META[name]!.dynamicImport)!;
    // the startup chunk's blob damaged, the entry's blob gone, another chunk of another length
    writeFileSync(join(copy, 'compile-cache', manifest.files[startup]!.blob), Buffer.alloc(4096, 7));
    rmSync(join(copy, 'compile-cache', manifest.files['convx.cjs']!.blob));
    writeFileSync(join(copy, 'compile-cache', 'manifest.json'), JSON.stringify({ ...manifest, files: { ...manifest.files, [runtime]: { ...manifest.files[runtime]!, length: 1 } } }));
    const damaged = await throughCache(copy, ['--help']);
    expect(damaged.stdout).toBe(expected);
    expect(damaged.compiled).toMatchObject({ [startup]: 'rejected', 'convx.cjs': 'source', [runtime]: 'source' });
    // a start under other V8 flags: V8 rejects the first blob, and no other is read
    const flagged = await throughCache(dist, ['--help'], { NODE_OPTIONS: '--max-old-space-size=4000' });
    expect(flagged.stdout).toBe(expected);
    expect(Object.values(flagged.compiled!).sort()).toEqual(['rejected', ...Object.keys(flagged.compiled!).slice(1).map(() => 'source')]);
    // a file edited in place to the same length (V8 checks the length alone): its new text runs
    const edited = join(tempDir('convx-compile-cache-'), 'dist');
    cpSync(dist, edited, { recursive: true, filter: (path) => !path.includes(`${join(dist, 'validation')}`) });
    cpSync(join(root, 'package.json'), join(edited, '..', 'package.json'));
    const chunk = join(edited, startup);
    writeFileSync(chunk, readFileSync(chunk, 'utf8').replace('display help for command', 'DISPLAY HELP FOR COMMAND'));
    const after = await throughCache(edited, ['--help']);
    expect(after.stdout).toContain('DISPLAY HELP FOR COMMAND');
    expect(after.compiled![startup]).toBe('source');
    expect(after.compiled!['convx.cjs']).toBe('cached');
    // another V8's cache, or the switch: nothing installed
    writeFileSync(join(copy, 'compile-cache', 'manifest.json'), JSON.stringify({ ...manifest, v8: '1.0.0' }));
    expect(await throughCache(copy, ['--help'])).toEqual({ stdout: expected, compiled: undefined });
    expect(await throughCache(dist, ['--help'], { NODE_DISABLE_COMPILE_CACHE: '1' })).toEqual({ stdout: expected, compiled: undefined });
    expect(readdirSync(join(copy, 'compile-cache')).length).toBeGreaterThan(2);
  });
});
