/**
 * The built CLI (bin/convx.js over dist/, as `npm test` builds it) prints what the in-process
 * run prints. Start-up stays cheap: `convx --help` and a command's `--help` load commander,
 * the command registry and the global options, and nothing heavy. A command's
 * handler (and through it DuckDB, the server, jose, the output libraries) is
 * imported only when that command runs. Each case runs the built CLI
 * (bin/convx.js, as `npm test` builds it) under a module resolve hook that
 * records every module imported.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, SAMPLES, scripted } from './helpers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'convx.js');

/** Packages that must load only where a command needs them. */
const HEAVY = ['@duckdb/node-api', 'fastify', 'jose', 'liquidjs', 'undici', 'ajv', 'csv-stringify', 'chalk', '@inquirer/prompts', 'htmlparser2'];

/** The modules of src/commands that --help may load: metadata only; every other one is a command's handler. */
const REGISTRY_MODULES = ['index.js', 'registry.js', 'globals.js', 'options.js'];
const HANDLER_MODULES = readdirSync(join(root, 'src', 'commands'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.replace(/\.ts$/, '.js'))
  .filter((f) => !REGISTRY_MODULES.includes(f));

const dir = mkdtempSync(join(tmpdir(), 'convx-startup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const trace = join(dir, 'hooks.mjs');
writeFileSync(
  trace,
  `import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(file, 'import ' + result.url + '\\n');
  return result;
}
`,
);
const register = join(dir, 'register.mjs');
writeFileSync(
  register,
  `import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
import { pathToFileURL } from 'node:url';
register(${JSON.stringify(pathToFileURL(trace).href)}, { data: { file: process.env.CONVX_TRACE_FILE } });
// require() (createRequire included) goes past the hook above: it is traced here
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (...args) {
  const path = resolveFilename.apply(this, args);
  if (path.startsWith('/')) appendFileSync(process.env.CONVX_TRACE_FILE, 'require ' + pathToFileURL(path).href + '\\n');
  return path;
};
// node's own modules required (the bundle is CommonJS: "node:crypto" or "crypto") never reach the resolver
const load = Module._load;
Module._load = function (request, ...rest) {
  if (Module.isBuiltin(request)) appendFileSync(process.env.CONVX_TRACE_FILE, 'require node:' + request.replace(/^node:/, '') + '\\n');
  return load.call(this, request, ...rest);
};
`,
);

let runs = 0;
/** The modules of dist/ and the packages each output of the bundle holds (dist/bundle-meta.json, written by scripts/bundle.js). */
const BUNDLE = JSON.parse(readFileSync(join(root, 'dist', 'bundle-meta.json'), 'utf8')) as Record<string, { modules: string[]; packages: string[] }>;

/** Runs the CLI and returns the package names (read from node_modules or in the bundle's outputs it loaded), the files of dist/ and the dist/ modules (in them) it loaded (packages: imported or required; importedPackages: as ES modules). */
function imported(
  args: string[],
  env: Record<string, string> = {},
): { status: number | null; packages: string[]; importedPackages: string[]; files: string[]; modules: string[]; builtins: string[]; loadedFromNodeModules: string[] } {
  const file = join(dir, `trace-${++runs}.txt`);
  writeFileSync(file, '');
  const child = spawnSync(process.execPath, ['--import', pathToFileURL(register).href, bin, ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', CONVX_TRACE_FILE: file, ...env },
  });
  const lines = [...new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean))].map((line) => line.split(' ') as ['import' | 'require', string]);
  const pathsOf = (how?: 'import') => lines.filter(([h, u]) => (how === undefined || h === how) && u.startsWith('file:')).map(([, u]) => fileURLToPath(u));
  const packagesOf = (paths: string[]) => {
    const packages = new Set<string>();
    for (const path of paths) {
      const match = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(path);
      if (match) packages.add(match[1]!.replace('\\', '/'));
    }
    return [...packages].sort();
  };
  const dist = join(root, 'dist');
  const files = [...new Set(pathsOf().filter((p) => p.startsWith(dist)).map((p) => p.slice(dist.length + 1).replaceAll('\\', '/')))];
  // the bundle's outputs (scripts/bundle.js) stand for the modules of dist/ they hold
  const modules = [...new Set(files.flatMap((f) => BUNDLE[f]?.modules ?? [f]))];
  const bundled = files.flatMap((f) => BUNDLE[f]?.packages ?? []);
  const builtins = [...new Set(lines.filter(([, u]) => u.startsWith('node:')).map(([, u]) => u))];
  const packages = [...new Set([...packagesOf(pathsOf()), ...bundled])].sort();
  const loadedFromNodeModules = pathsOf().filter((p) => /[\\/]node_modules[\\/]/.test(p));
  return { status: child.status, packages, importedPackages: packagesOf(pathsOf('import')), files, modules, builtins, loadedFromNodeModules };
}

describe('start-up', () => {
  it('the trace sees what a command imports when it runs (the control for the cases below)', () => {
    const run = imported(['token', '--plugin', 'shop'], { CONVX_JWT_SECRET: 'startup-test-secret' });
    expect(run.status).toBe(0);
    expect(run.packages).toContain('jose');
    expect(run.modules).toContain('commands/token.js');
    // node's own modules are seen too (the control of --help's node:crypto below)
    expect(run.builtins).toContain('node:crypto');
  });

  for (const args of [['--help'], [], ['report', '--help'], ['serve', '--help'], ['validate', '--help'], ['data', 'generate', '--help'], ['auth', 'login', '--help']]) {
    it(`convx ${args.join(' ') || '(no arguments)'} loads commander and the registry, nothing heavy`, () => {
      const run = imported(args);
      expect(run.status).toBe(args.length ? 0 : 2);
      expect(run.packages.filter((p) => HEAVY.includes(p))).toEqual([]);
      // commander, in the bundle: no package is read from node_modules at all
      expect(run.packages).toEqual(['commander']);
      expect(run.importedPackages).toEqual([]);
      // the bundle's entry and the chunk of what every start needs (and rolldown's runtime), no module of dist/ on its own
      expect(run.files).toContain('convx.cjs');
      expect(run.files.length).toBeLessThanOrEqual(3);
      expect(run.files.filter((f) => BUNDLE[f] === undefined)).toEqual([]);
      expect(run.modules).toContain('cli.js');
      expect(run.modules.filter((m) => HANDLER_MODULES.some((h) => m === `commands/${h}`))).toEqual([]);
      // the context (config, output writers) and the local, API and server back ends come with a command's handler
      expect(run.modules.filter((m) => m === 'context.js' || /^(local|api)\//.test(m) || (m.startsWith('server/') && m !== 'server/limits.js'))).toEqual([]);
      // the config files are read and written by a command, not by help (their module loads node:crypto, some 7 ms)
      expect(run.modules.filter((m) => m === 'config.js' || m === 'config-file.js')).toEqual([]);
      expect(run.builtins).not.toContain('node:crypto');
    });
  }
});

describe('what a command that reads data loads', () => {
  const argv = ['report', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-31'];
  /** One run of a report to a pipe, traced, for the cases below. */
  let piped: ReturnType<typeof imported> | undefined;
  const pipedRun = () => (piped ??= imported(argv));

  it("DuckDB's package: its JavaScript from the bundle, its native binding required, nothing of it imported as an ES module (which first scans each file for exports, about 60 ms)", () => {
    const run = pipedRun();
    expect(run.status).toBe(0);
    // the command's DuckDB side did load (the control), through the one module that loads the package
    expect(run.modules).toContain('local/db.js');
    expect(run.modules).toContain('local/duckdb.js');
    expect(run.packages).toContain('@duckdb/node-api');
    expect(run.importedPackages.filter((p) => p.startsWith('@duckdb/'))).toEqual([]);
    // the package's 124 files are one output of the bundle (scripts/bundle.js), not read from node_modules one by one
    expect(run.files.filter((f) => BUNDLE[f]?.packages.includes('@duckdb/node-api'))).toHaveLength(1);
    expect(run.loadedFromNodeModules.filter((p) => p.includes('@duckdb/node-api'))).toEqual([]);
    expect(run.packages).toContain('@duckdb/node-bindings');
  });

  it("the native binding the bundle requires is a dependency of convx's, at the version DuckDB's package asks for (found wherever a package manager puts it)", () => {
    const ours = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const nodeApi = JSON.parse(readFileSync(join(root, 'node_modules', '@duckdb', 'node-api', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(nodeApi.dependencies['@duckdb/node-bindings']).toBeDefined();
    expect(ours.dependencies['@duckdb/node-bindings']).toBe(nodeApi.dependencies['@duckdb/node-bindings']);
    expect(ours.dependencies['@duckdb/node-api']).toBe(JSON.parse(readFileSync(join(root, 'node_modules', '@duckdb', 'node-api', 'package.json'), 'utf8')).version);
  });

  it('csv-stringify: required for -o csv, not imported as an ES module (about 8 ms against 3)', () => {
    const run = imported([...argv, '-o', 'csv']);
    expect(run.status).toBe(0);
    expect(run.modules).toContain('output/csv.js');
    expect(run.packages).toContain('csv-stringify');
    expect(run.importedPackages.filter((p) => p.startsWith('csv-'))).toEqual([]);
  });

  it("htmlparser2: required by a validation's HTML checks, not imported as an ES module", () => {
    const run = imported(['validate', join(SAMPLES, '..', 'deliveries', 'welcome.json'), '--data', SAMPLES, '-o', 'json']);
    expect(run.status).toBe(0);
    expect(run.modules).toContain('validation/html-parser.js');
    expect(run.packages).toContain('htmlparser2');
    expect(run.importedPackages).toEqual([]);
  });

  it('chalk: only where something is coloured, not for output to a pipe, yes with FORCE_COLOR', () => {
    const run = pipedRun();
    expect(run.status).toBe(0);
    expect(run.modules).toContain('context.js');
    expect(run.packages).not.toContain('chalk');
    const forced = imported(argv, { FORCE_COLOR: '1', NO_COLOR: '' });
    expect(forced.status).toBe(0);
    expect(forced.packages).toContain('chalk');
  });
});

describe('the built binary', () => {
  const exec = promisify(execFile);

  it('prints what the in-process run prints, and exits 2 on bad flags', async () => {
    const argv = ['report', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'];
    const spawned = await exec(process.execPath, [bin, ...argv]);
    expect(spawned.stdout).toBe((await cli(argv)).stdout);
    const help = await exec(process.execPath, [bin, '--help']);
    expect(help.stdout).toMatch(/Usage: convx/);
    const bad = await exec(process.execPath, [bin, 'report', '--data', SAMPLES, '--from', 'x']).catch((e: { code: number; stderr: string }) => e);
    expect((bad as { code: number }).code).toBe(2);
    expect((bad as { stderr: string }).stderr).toMatch(/--from: "x" is not a date/);
  });

  it("with CONVX_TIMINGS, counts the process's start before the command and its total from the process's start; the output the same bytes", async () => {
    const argv = ['report', '--data', SAMPLES, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'];
    const spawned = await exec(process.execPath, [bin, ...argv], { env: { ...process.env, CONVX_TIMINGS: '1' } });
    expect(spawned.stdout).toBe((await cli(argv)).stdout);
    const ms = (label: string) => Number(new RegExp(`^  ${label}\\s+(\\d+) ms$`, 'm').exec(spawned.stderr)?.[1]);
    const start = ms('start \\(Node, convx’s modules\\)');
    const total = ms('total');
    const steps = ['open the dataset', 'query', 'write the output'].map(ms);
    expect(start).toBeGreaterThan(0);
    for (const step of steps) expect(step).toBeGreaterThanOrEqual(0);
    expect(start + steps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(total + 3);
    // the modules of --help alone without it: timings.ts loads where it is asked
    const help = imported(['--help'], { CONVX_TIMINGS: '' });
    expect(help.builtins).not.toContain('node:async_hooks');
    expect(imported(['--help'], { CONVX_TIMINGS: '1' }).builtins).toContain('node:async_hooks');
  });

  it('with CONVX_TIMINGS, Ctrl-C prints the timings so far before "interrupted", and exits 130', async () => {
    // an API that takes the request and never answers: the command waits in it
    let asked: () => void = () => undefined;
    const waiting = new Promise<void>((resolve) => (asked = resolve));
    const api = await scripted(() => asked());
    try {
      const argv = ['report', '--api', api.url, '--from', '2024-01-01', '--to', '2024-01-31'];
      const child = spawn(process.execPath, [bin, ...argv], { env: { ...process.env, CONVX_TIMINGS: '1', CONVX_TOKEN: 'tok' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      await waiting;
      child.kill('SIGINT');
      expect(await exited, stderr).toBe(130);
      expect(stderr).toMatch(/^\ntimings \(CONVX_TIMINGS\), wall time;.*\n  start \(Node, convx’s modules\)\s+\d+ ms\n(?:  .*\n)*  total\s+\d+ ms\n\ninterrupted\n$/);
    } finally {
      await api.close();
    }
  });
});

describe('the package', () => {
  const exec = promisify(execFile);

  it('ships the bundle, its code cache and the files it reads, every output of it, and no module of dist/ unbundled', async () => {
    // npm's own list of what `npm pack` (and so `npm publish`) puts in the tarball, the build as it stands
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const { stdout } = await exec(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root });
    const files = (JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path).sort();
    const outputs = Object.keys(BUNDLE).map((f) => `dist/${f}`);
    // the bundle's outputs (bin/convx.js requires the entry, the entry its chunks) and the data a validation reads
    expect(outputs.filter((f) => !files.includes(f))).toEqual([]);
    expect(files).toContain('bin/convx.js');
    expect(files).toContain('bin/package.json');
    expect(files).toContain('dist/validation/data/caniemail.json');
    // V8's code cache of the bundle (bin/compile-cache.cjs reads it; of use where Node's V8 is the builder's)
    expect(files).toContain('dist/compile-cache/manifest.json');
    expect(files).toContain('bin/compile-cache.cjs');
    // nothing else of dist/: the modules tsc emitted are in the bundle, their .d.ts and maps of no use to a user
    const other = files.filter((f) => !outputs.includes(f) && !/^dist\/(validation\/data|compile-cache)\//.test(f) && !f.startsWith('bin/'));
    expect(other.filter((f) => !['README.md', 'package.json', 'LICENSE'].includes(f))).toEqual([]);
  });
});
