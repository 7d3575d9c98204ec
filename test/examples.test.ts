/**
 * Issue 22, point 9: every example of `--help` (convx's own and each command's) and of README.md runs
 * as written on the samples. The examples are read from the program's help and from the file, so one
 * added later is run too. Each page's or code block's examples run in order (a later one may use a
 * file an earlier one wrote) in an environment of their own:
 *
 * - the working directory holds `samples/` (the repository's), and token.txt, a token of plugin shop;
 * - the config's default profile asks samples/shop served (below) in API mode, with its data set as
 *   `convx config set data samples/shop` sets it; profile shop reads samples/shop (profiles staging
 *   and dev exist too, the names the examples use); CONVX_JWT_SECRET is
 *   dev-secret, as the README's serving section exports it; CI is set (no browser opens);
 * - the API of an example (http://127.0.0.1:8080, or a placeholder host: https://host,
 *   https://reports.example.com) is samples/shop served on a loopback port;
 * - `convx serve` runs until it listens (on a free port), then stops on SIGTERM, exiting 0.
 *
 * An example exits 0, unless its comment says "exits N"; a reporting example finds something. The
 * few an automated run cannot do are named with the reason (NOT_RUN). Simple command lines run in
 * process (redirections, pipes between convx and `cat`); the rest (`$(…)` for curl) in bash with the
 * built binary as `convx`.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, SAMPLES, serveInProcess, suiteThreads, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const ROOT = join(import.meta.dirname, '..');
const SECRET = 'dev-secret';

/** Examples an automated run cannot do as written, and why. */
const NOT_RUN: [RegExp, string][] = [
  [/^convx init\b/, 'asks its questions at a terminal'],
  [/^convx auth login\b(?!.*--with-token)/, 'asks for the token at a terminal'],
  [/--orders \d{6,}/, 'writes a dataset at benchmark scale'],
];

interface Group {
  /** Where the examples are: "convx report --help", "README.md line 60". */
  where: string;
  lines: string[];
}

/** The lines of a text as shell lines: a line ending in a backslash goes on with the next. */
function joined(lines: string[]): string[] {
  const out: string[] = [];
  let pending = '';
  for (const line of lines) {
    if (line.endsWith('\\')) pending += `${line.slice(0, -1).trimEnd()} `;
    else {
      out.push(pending + line.trimStart());
      pending = '';
    }
  }
  return out;
}

/** An example's line invokes convx: at its start, after an environment prefix, a pipe or `$(`, or it exports a variable for the next. */
const INVOKES = /(^|\|\s*|\$\()([A-Z_]+=\S*\s+)*convx\s/;

/** The examples of a help text: the lines under "Examples:". */
function helpLines(help: string): string[] {
  const at = help.indexOf('\nExamples:\n');
  if (at < 0) return [];
  const lines: string[] = [];
  for (const line of help.slice(at + '\nExamples:\n'.length).split('\n')) {
    if (!line.startsWith('  ')) break;
    lines.push(line.slice(2));
  }
  return joined(lines);
}

/** README.md's examples: each ```sh block's command lines, and each plain block's lines after "$ ". */
function readmeGroups(): Group[] {
  const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n');
  const groups: Group[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w*)$/.exec(lines[i]!);
    if (!fence) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    const shell = fence[1] === 'sh';
    if (!shell && fence[1] !== '') continue;
    const commands = shell ? joined(body) : body.filter((l) => l.startsWith('$ ')).map((l) => l.slice(2));
    const examples = commands.filter((l) => INVOKES.test(l) || /^export [A-Z_]+=/.test(l));
    if (examples.some((l) => INVOKES.test(l))) groups.push({ where: `README.md line ${start + 1}`, lines: examples });
  }
  return groups;
}

/** A word of a shell line, or an operator (unquoted | < > &). */
type Token = { word: string } | { op: string };

function tokens(line: string): Token[] {
  const out: Token[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === ' ') {
      if (word !== undefined) out.push({ word });
      word = undefined;
    } else if ('|<>&'.includes(c)) {
      if (word !== undefined) out.push({ word });
      word = undefined;
      out.push({ op: c });
    } else word = (word ?? '') + c;
  }
  if (word !== undefined) out.push({ word });
  return out;
}

/** The line without its comment ("   # in a CI job"). */
const uncommented = (line: string) => line.replace(/\s+#\s.*$/, '');
/** The exit code an example's comment says it has ("exits 1"), else 0. */
const expectedCode = (line: string) => Number(/#.*\bexits (\d+)/.exec(line)?.[1] ?? 0);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** One group's place: its directory, config and environment. */
class Place {
  readonly cwd = tempDir('convx-examples-');
  readonly home = tempDir('convx-examples-home-');
  readonly env: Record<string, string>;

  constructor(
    readonly api: string,
    token: string,
    jwks: string,
  ) {
    symlinkSync(join(ROOT, 'samples'), join(this.cwd, 'samples'));
    writeFileSync(join(this.cwd, 'token.txt'), `${token}\n`);
    writeFileSync(join(this.cwd, 'keys.json'), jwks);
    const config = join(this.home, '.config');
    mkdirSync(join(config, 'convx'), { recursive: true });
    const local = { mode: 'local', data: SAMPLES };
    const remote = { mode: 'api', api: `${api}/v1` };
    // The default profile: API mode against the served samples (an example without --data or --api
    // asks the server, which holds them attributed, instead of reading the files again), its data
    // set as `convx config set data samples/shop` sets it, its validation at the server's /v4.
    const served = { ...remote, deliveryApi: `${api}/v4`, data: SAMPLES };
    writeFileSync(join(config, 'convx', 'config.json'), JSON.stringify({ profiles: { default: served, shop: local, staging: remote, dev: remote } }), { mode: 0o600 });
    writeFileSync(join(config, 'convx', 'credentials.json'), JSON.stringify({ profiles: { default: { token }, staging: { token }, dev: { token } } }), { mode: 0o600 });
    this.env = { HOME: this.home, XDG_CONFIG_HOME: config, CONVX_JWT_SECRET: SECRET, CI: '1', ...suiteThreads() };
  }

  /** A path of an example: ~ is this place's home. */
  path(name: string): string {
    return name.startsWith('~/') ? join(this.home, name.slice(2)) : join(this.cwd, name);
  }

  async run(text: string): Promise<Outcome> {
    const line = uncommented(text).replaceAll(/https?:\/\/(127\.0\.0\.1:8080|host|reports\.example\.com)/g, this.api);
    const exported = /^export ([A-Z_]+)=(\S*)$/.exec(line);
    if (exported) {
      this.env[exported[1]!] = exported[2]!;
      return { code: 0, stdout: '', stderr: '' };
    }
    const evaluated = /^eval "\$\((.*)\)"$/.exec(line);
    if (evaluated) return this.run(evaluated[1]!);
    if (line.includes('$(')) return this.bash(line);
    return this.pipeline(tokens(line));
  }

  /** Commands joined by pipes, each `cat FILE` or convx with an environment prefix; < and > redirect. */
  async pipeline(all: Token[]): Promise<Outcome> {
    let stdin: string | undefined;
    let last: Outcome = { code: 0, stdout: '', stderr: '' };
    const background = 'op' in (all.at(-1) ?? { word: '' }) && (all.at(-1) as { op: string }).op === '&';
    const segments: Token[][] = [[]];
    for (const t of background ? all.slice(0, -1) : all) {
      if ('op' in t && t.op === '|') segments.push([]);
      else segments.at(-1)!.push(t);
    }
    for (const segment of segments) {
      const words: string[] = [];
      let output: string | undefined;
      for (let i = 0; i < segment.length; i++) {
        const t = segment[i]!;
        const next = segment[i + 1];
        if ('op' in t) {
          const target = this.path((next as { word: string }).word);
          if (t.op === '<') stdin = readFileSync(target, 'utf8');
          else if (t.op === '>') output = target;
          i++;
        } else words.push(t.word);
      }
      const env: Record<string, string> = { ...this.env };
      while (/^[A-Z_]+=/.test(words[0] ?? '')) {
        const [name, ...value] = words.shift()!.split('=');
        env[name!] = value.join('=');
      }
      if (words[0] === 'cat') last = { code: 0, stdout: readFileSync(this.path(words[1]!), 'utf8'), stderr: '' };
      else if (words[0] === 'convx' && words[1] === 'serve') last = await this.serve(words.slice(2), env);
      else if (words[0] === 'convx') last = await kept(words.slice(1), { env, cwd: this.cwd, now: new Date().toISOString(), ...(stdin === undefined ? {} : { stdin }) });
      else throw new Error(`not a command this test runs: ${words.join(' ')}`);
      if (output !== undefined) {
        mkdirSync(dirname(output), { recursive: true });
        writeFileSync(output, last.stdout);
        last = { ...last, stdout: '' };
      }
      stdin = last.stdout;
    }
    return last;
  }

  /** convx serve, on a free port, until it listens; then SIGTERM, as the process would get it. */
  async serve(argv: string[], env: Record<string, string>): Promise<Outcome> {
    const at = argv.indexOf('--port');
    const args = at < 0 ? [...argv, '--port', '0'] : argv.map((a, i) => (i === at + 1 ? '0' : a));
    const served = await serveInProcess(args, env, this.cwd);
    return { code: await served.stop(), stdout: '', stderr: '' };
  }

  /** A line with a command substitution, in bash, the built binary as `convx` (not waiting idly: the API answers from this process). */
  async bash(line: string): Promise<Outcome> {
    const bin = join(this.home, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'convx'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin', 'convx.js')}" "$@"\n`);
    chmodSync(join(bin, 'convx'), 0o755);
    const child = spawn('bash', ['-c', line], { cwd: this.cwd, env: { ...this.env, PATH: `${bin}:${process.env.PATH}` }, timeout: 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number>((resolve) => child.on('close', (status) => resolve(status ?? 1)));
    return { code, stdout, stderr };
  }
}

/**
 * The commands of the examples on the samples (samples/ of each place is a link to the repository's)
 * are lent one backend for each of their flags (kept-backends.ts): no example writes there. Every
 * other dataset (one an example imports, then reports on, then appends to) is opened as convx opens it.
 */
const SAMPLES_FILES = realpathSync(SAMPLES);
const kept = keptBackends({ keptAs: (path) => (existsSync(path) && realpathSync(path) === SAMPLES_FILES ? SAMPLES : undefined) });

let server: { url: string; close(): Promise<void> } | undefined;
let token = '';
/** A JSON Web Key Set of one public key, the keys.json of `convx serve --jwks keys.json`. */
let jwks = '';

beforeAll(async () => {
  const { startServer } = await import('../src/server/start.js');
  const { signDevelopmentToken } = await import('../src/server/auth.js');
  server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
  token = await signDevelopmentToken(SECRET, 'shop', '1h');
  const { exportJWK, generateKeyPair } = await import('jose');
  const { publicKey } = await generateKeyPair('ES256');
  jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), alg: 'ES256', kid: 'example' }] });
});
afterAll(async () => {
  await server?.close();
});

/** The help pages: convx's own and each command's, as `--help` prints them (read once, for both tests that ask). */
let helpRead: Promise<Group[]> | undefined;
const helpGroups = (): Promise<Group[]> => (helpRead ??= readHelpGroups());

async function readHelpGroups(): Promise<Group[]> {
  const { COMMANDS } = await import('../src/commands/index.js');
  const pages = [[], ...COMMANDS.map((c) => c.name.split(' '))];
  const groups: Group[] = [];
  for (const words of pages) {
    const help = await cli([...words, '--help']);
    groups.push({ where: `convx ${[...words, '--help'].join(' ')}`, lines: helpLines(help.stdout) });
  }
  return groups;
}

async function runGroup(group: Group): Promise<string[]> {
  const origin = new URL(server!.url).origin;
  const place = new Place(origin, token, jwks);
  const problems: string[] = [];
  for (const line of group.lines) {
    const skip = NOT_RUN.find(([pattern]) => pattern.test(line));
    if (skip) continue;
    let outcome: Outcome;
    try {
      outcome = await place.run(line);
    } catch (error) {
      problems.push(`${line}\n    cannot run: ${(error as Error).message}`);
      continue;
    }
    if (process.env.CONVX_EXAMPLES_LOG) console.log(`${group.where}: ${line} -> ${outcome.code}`);
    const expected = expectedCode(line);
    if (outcome.code !== expected) problems.push(`${line}\n    exits ${outcome.code}, not ${expected}: ${outcome.stderr.trim()}`);
    else if (/^No (sources|conversions) in /m.test(outcome.stderr)) problems.push(`${line}\n    finds nothing: ${outcome.stderr.trim().split('\n')[0]}`);
  }
  return problems;
}

describe('every example runs as written on the samples', () => {
  it('reads the examples of every help page and of README.md', async () => {
    const help = await helpGroups();
    const readme = readmeGroups();
    expect(help.flatMap((g) => g.lines).length).toBeGreaterThan(50);
    expect(readme.flatMap((g) => g.lines).length).toBeGreaterThan(15);
    const all = [...help, ...readme].flatMap((g) => g.lines);
    // the few not run, each for its reason
    expect(all.filter((l) => NOT_RUN.some(([p]) => p.test(l))).length).toBeLessThanOrEqual(5);
  });

  it('runs the examples of --help', { timeout: 600_000 }, async () => {
    const problems: string[] = [];
    for (const group of await helpGroups()) for (const p of await runGroup(group)) problems.push(`${group.where}: ${p}`);
    expect(problems).toEqual([]);
  });

  it('runs the examples of README.md', { timeout: 600_000 }, async () => {
    const problems: string[] = [];
    for (const group of readmeGroups()) for (const p of await runGroup(group)) problems.push(`${group.where}: ${p}`);
    expect(problems).toEqual([]);
  });
});

describe('what the README and the guides say about the program', () => {
  it('.gitignore covers the tarball of `npm pack`', () => {
    const { name, version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
    const patterns = readFileSync(join(ROOT, '.gitignore'), 'utf8').split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    const glob = (p: string) => new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[^/]*').replaceAll('?', '[^/]')}$`);
    expect(patterns.some((p) => glob(p.trim()).test(`${name}-${version}.tgz`))).toBe(true);
    expect(patterns.some((p) => glob(p.trim()).test('package.json'))).toBe(false);
  });

  it('names the questions of `convx init` in the order it asks them', () => {
    const init = readFileSync(join(ROOT, 'src', 'commands', 'init.ts'), 'utf8');
    const asked = ['Where does the data come from?', 'Default output format', 'Dataset directory'].map((m) => init.indexOf(`'${m}`));
    expect(asked.every((at, i) => at >= 0 && (i === 0 || at > asked[i - 1]!))).toBe(true);
    const guide = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
    const bullet = /- `convx init[^`]*` asks ([\s\S]*?)\n- /.exec(guide)![1]!;
    const told = ['mode', 'format', 'dataset'].map((w) => bullet.indexOf(w));
    expect(told.every((at, i) => at >= 0 && (i === 0 || at > told[i - 1]!))).toBe(true);
  });
});
