/**
 * The completion engine (`convx __complete WORDS…`, commands/complete.ts): candidates from the
 * command registry, the global flags and the parameters table; the values of the data through
 * Backend.lookup, in local mode (files as they are, and a LocalBackend's scope) and in API mode
 * against a loopback server.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLookups } from '../src/local/lookups.js';
import { openLocalBackend } from '../src/local/open.js';
import { candidates, dataFlags, shellWord } from '../src/commands/complete.js';
import { COMMANDS } from '../src/commands/index.js';
import { commandGlobals } from '../src/commands/globals.js';
import { field, parameters } from '../src/model/parameters.js';
import { SOURCE_TYPES } from '../src/model/shapes.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { cli, dataset, SAMPLES, tempDir, twoPluginFiles, suiteThreadsOption } from './helpers.js';

const complete = async (...words: string[]) => {
  const run = await cli(['__complete', ...words]);
  expect(run.code).toBe(0);
  expect(run.stderr).toBe('');
  return run.stdout.split('\n').filter(Boolean);
};

/** Plugins A and B; currencies EUR (A) and CZK (B); sources shared (A, B) and n1 (B), in the touches only; no countries. */
const files = twoPluginFiles();

describe('convx __complete walks the registry', () => {
  it('offers the commands, then a group\'s subcommands, in the registry\'s order', async () => {
    expect(await complete('')).toEqual([...new Set(COMMANDS.map((c) => c.name.split(' ')[0]))]);
    expect(await complete('data', '')).toEqual(COMMANDS.filter((c) => c.name.startsWith('data ')).map((c) => c.name.slice(5)));
    expect(await complete('co')).toEqual(['contact', 'completion', 'config']);
  });

  it("offers a command's own flags and the global flags it honours, from its definition", async () => {
    for (const command of COMMANDS) {
      const own = (command.options ?? []).flatMap((o) => o.flags.split(/[ ,|]+/).filter((f) => f.startsWith('--')));
      expect(await complete(...command.name.split(' '), '--')).toEqual([...own, ...commandGlobals(command), '--help']);
    }
  }, 60_000);

  it('takes the flags and values of the parameters table', async () => {
    const flags = parameters('report').flatMap((p) => /--[a-z-]+/.exec(field(p, 'flag') ?? '')?.[0] ?? []);
    expect(flags.length).toBeGreaterThan(5);
    expect(await complete('report', '--')).toEqual(expect.arrayContaining(flags));
    expect(await complete('items', '--source-type', '')).toEqual([...SOURCE_TYPES]);
    // a flag's value is not the command's argument: the word after --from is skipped
    expect(await complete('--from', '2024-01-01', 'rep')).toEqual(['report']);
  });

  it('prints nothing where the shell completes file names, and stays out of --help', async () => {
    expect(await complete('validate', '')).toEqual([]);
    expect(await complete('report', '--data', '')).toEqual([]);
    expect((await cli(['--help'])).stdout).not.toContain('__complete');
  });

  it('asks for values with the data the line names (a leading ~ as $HOME), the last of each flag', async () => {
    const asked: [string, object][] = [];
    const found = await candidates(['--data', '~/a', 'report', '--data', 'b', '--plugin', 'x', '--country', 'CZ,S'], async (kind, words) => {
      asked.push([kind, dataFlags(words, '/home/me')]);
      return ['AT', 'SK', 'SE'];
    });
    expect(found).toEqual(['CZ,SK', 'CZ,SE']);
    expect(asked).toEqual([['countries', { data: 'b', plugin: 'x' }]]);
    expect(dataFlags(['--data', '~/a', '--profile', 'p'], '/home/me')).toEqual({ data: '/home/me/a', profile: 'p' });
  });
});

describe('look-ups in local mode (Backend.lookup)', () => {
  let dir = '';
  beforeAll(() => {
    dir = dataset(files);
  });

  it('reads the files as they are, every plugin, a place without values giving way to the next', async () => {
    const lookups = await openLookups(dir);
    try {
      expect((await lookups.lookup!('plugins')).sort()).toEqual(['A', 'B']);
      expect((await lookups.lookup!('currencies')).sort()).toEqual(['CZK', 'EUR']);
      // no column of countries anywhere
      expect(await lookups.lookup!('countries')).toEqual([]);
      // no sources table: the touches' ids
      expect((await lookups.lookup!('sources')).sort()).toEqual(['n1', 'shared']);
      expect(await lookups.lookup!('smartflows')).toEqual([]);
      expect(await lookups.lookup!('sources', { accept: (v) => v !== 'n1' })).toEqual(['shared']);
    } finally {
      await lookups.close();
    }
  });

  it("a LocalBackend looks up in its plugin's scope", async () => {
    const backend = await openLocalBackend(dir, { ...suiteThreadsOption(), plugin: 'A' });
    try {
      expect(await backend.lookup('plugins')).toEqual(['A']);
      expect(await backend.lookup('currencies')).toEqual(['EUR']);
      expect(await backend.lookup('sources')).toEqual(['shared']);
    } finally {
      await backend.close();
    }
  });

  it('__complete offers them tidied: upper-cased codes, sorted', async () => {
    expect(await complete('report', '--data', SAMPLES, '--country', '')).toEqual(['AT', 'CZ', 'DE', 'PL', 'SK']);
    expect(await complete('report', '--data', dir, '--currency', '')).toEqual(['CZK', 'EUR']);
    expect(await complete('drill', '--data', dir, '')).toEqual(['n1', 'shared']);
    expect(await complete('config', 'set', '--data', dir, 'plugin', '')).toEqual(['A', 'B']);
  });

  it('offers values only for the flags the command takes (report takes no --source), every spelling', async () => {
    expect(await complete('items', '--data', dir, '--source', '')).toEqual(['n1', 'shared']);
    expect(await complete('report', '--data', dir, '--source', '')).toEqual([]);
    expect(await complete('report', '--data', dir, '--smartflow', '')).toEqual([]);
    expect(await complete('drill', '--data', dir, '--source-type', '')).toEqual([]);
    expect(await complete('items', '--data', dir, '--source-type', '')).toEqual([...SOURCE_TYPES]);
    // a global flag the command does not honour: none; -o and --format alike where it does
    expect(await complete('data', 'generate', '--plugin', '')).toEqual([]);
    expect(await complete('data', 'generate', '-o', '')).toEqual([]);
    expect(await complete('report', '-o', 'js')).toEqual(['json', 'jsonl']);
    expect(await complete('report', '--format', 'js')).toEqual(['json', 'jsonl']);
    // every command and every flag that takes a value: something offered only where the command takes it
    for (const command of COMMANDS) {
      for (const flag of ['--source', '--smartflow', '--country', '--plugin', '--tz', '--fail-on']) {
        const takes = [...(command.options ?? []).map((o) => o.flags), ...commandGlobals(command)].some((f) => f.split(/[ ,|]+/).includes(flag));
        if (!takes) expect(await complete(...command.name.split(' '), '--data', SAMPLES, flag, ''), `${command.name} ${flag}`).toEqual([]);
      }
    }
  }, 60_000);

  it("offers a choice's words (--by, --compare), a command's sort fields either way, and a drill's smartflow ids beside its source ids", async () => {
    expect(await complete('trend', '--by', '')).toEqual(['hour', 'day', 'week', 'month']);
    expect(await complete('total', '--compare', '')).toEqual(['previous', 'year']);
    expect(await complete('items', '--sort', '-date')).toEqual(['-datetime']);
    // report sorts by a list: the next field after a comma, not one already given either way
    const report = await complete('report', '--sort', '-conversionsNumber,');
    expect(report).toContain('-conversionsNumber,name');
    expect(report.filter((c) => /,-?conversionsNumber$/.test(c))).toEqual([]);
    expect((await complete('report', '--sort', 'name,')).filter((c) => /,-?name$/.test(c))).toEqual([]);
    // items and drill sort by one field (drill's are items'): nothing after a comma
    expect(await complete('items', '--sort', 'contactId,')).toEqual([]);
    expect(await complete('drill', '--sort', '-date')).toEqual(['-datetime']);
    expect(await complete('trend', '--sort', '')).toEqual([]);
    const drill = await complete('drill', '--data', SAMPLES, '');
    expect(drill).toEqual(expect.arrayContaining(['k-1', 'a-1', 'sf-1']));
    expect(await complete('drill', '--data', SAMPLES, 'sf')).toEqual(drill.filter((id) => id.startsWith('sf')));
  });

  it('does not offer again what a comma list already holds', async () => {
    expect(await complete('report', '--data', SAMPLES, '--country', 'CZ,')).toEqual(['CZ,AT', 'CZ,DE', 'CZ,PL', 'CZ,SK']);
    expect(await complete('report', '--data', SAMPLES, '--country', 'CZ,SK,')).toEqual(['CZ,SK,AT', 'CZ,SK,DE', 'CZ,SK,PL']);
    expect(await complete('report', '--data', SAMPLES, '--country', 'CZ,C')).toEqual([]);
    expect(await complete('report', '--data', dir, '--currency', 'EUR,')).toEqual(['EUR,CZK']);
  });

  it('completes codes and zones typed in any case, as the flags take them; other values as typed', async () => {
    expect(await complete('report', '--data', dir, '--currency', 'e')).toEqual(['EUR']);
    expect(await complete('report', '--data', dir, '--reference-currency', 'c')).toEqual(['CZK']);
    expect(await complete('report', '--data', SAMPLES, '--country', 'cz,s')).toEqual(['cz,SK']);
    expect(await complete('report', '--data', SAMPLES, '--country', 'cz,')).not.toContain('cz,CZ');
    expect(await complete('report', '--tz', 'europe/pra')).toEqual(['Europe/Prague']);
    expect(await complete('report', '-o', 'J')).toEqual([]);
  });
});

describe('--profile completes with the profiles of the config', () => {
  it("offers the config's profile names, the word being typed not taken for a profile", async () => {
    const home = tempDir();
    mkdirSync(join(home, 'convx'));
    writeFileSync(
      join(home, 'convx', 'config.json'),
      JSON.stringify({ defaultProfile: 'dev', profiles: { dev: { mode: 'local', data: SAMPLES }, prod: { mode: 'api', api: 'http://127.0.0.1:9/v1' }, 'prod-eu': { mode: 'local' } } }),
    );
    const complete = async (...words: string[]) => (await cli(['__complete', ...words], { env: { XDG_CONFIG_HOME: home } })).stdout;
    expect(await complete('report', '--profile', '')).toBe('dev\nprod\nprod-eu\n');
    expect(await complete('report', '--profile', 'pr')).toBe('prod\nprod-eu\n');
    expect(await complete('--profile', 'd')).toBe('dev\n');
    expect(await complete('config', 'set', '--profile', 'prod-')).toBe('prod-eu\n');
    // a profile named before the cursor still names the data of the values after it
    expect(await complete('report', '--profile', 'dev', '--currency', 'E')).toBe('EUR\n');
    // --profile=pr: bash's three words (= is one of its COMP_WORDBREAKS), the cursor on = or after it; zsh's and fish's one word
    expect(await complete('report', '--profile', '=', 'pr')).toBe('prod\nprod-eu\n');
    expect(await complete('report', '--profile', '=')).toBe('=dev\n=prod\n=prod-eu\n');
    expect(await complete('report', '--profile=pr')).toBe('--profile=prod\n--profile=prod-eu\n');
    // and a profile given so names the data too
    expect(await complete('report', '--profile', '=', 'dev', '--currency', 'E')).toBe('EUR\n');
    expect(await complete('--profile=dev', 'report', '--currency', 'E')).toBe('EUR\n');
    // a wrong stored setting (a hand edit) stops no completion, the commands that repair it included, and prints nothing on stderr
    writeFileSync(
      join(home, 'convx', 'config.json'),
      JSON.stringify({ defaultProfile: 'dev', profiles: { dev: { mode: 'local', data: SAMPLES, format: 'xml' }, prod: { tz: 3 } } }),
    );
    // (with CONVX_TIMINGS exported too: no timings on a completion)
    const run = await cli(['__complete', 'config', 'set', 'format', 'csv', '--profile', ''], { env: { XDG_CONFIG_HOME: home, CONVX_TIMINGS: '1' } });
    expect([run.stdout, run.stderr]).toEqual(['dev\nprod\n', '']);
    expect(await complete('report', '--currency', 'E')).toBe('EUR\n');
  });
});

describe('the words as the shell hands them over, quoted', () => {
  it('a --data path with a space, quoted or escaped, names the dataset (not a file name to complete)', async () => {
    const dir = join(tempDir(), 'my dátá set');
    mkdirSync(dir);
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    const complete = async (...words: string[]) => (await cli(['__complete', ...words])).stdout;
    for (const typed of [`"${dir}"`, `'${dir}'`, dir.replaceAll(' ', '\\ '), `--data=${dir.replaceAll(' ', '\\ ')}`]) {
      const words = typed.startsWith('--data=') ? [typed] : ['--data', typed];
      expect(await complete('report', ...words, '--currency', ''), typed).toBe('CZK\nEUR\n');
    }
    expect(await complete('report', '--data', '=', `"${dir}"`, '--currency', '')).toBe('CZK\nEUR\n');
  });

  it('shellWord removes quotes and backslashes as the shell would', () => {
    expect(shellWord(`"a b"`)).toBe('a b');
    expect(shellWord(`'a "b" \\c'`)).toBe('a "b" \\c');
    expect(shellWord('a\\ b')).toBe('a b');
    expect(shellWord(`"a \\"b\\" \\c"`)).toBe('a "b" \\c');
    expect(shellWord('plain')).toBe('plain');
  });
});

describe('look-ups in API mode (Backend.lookup over the client)', () => {
  const SECRET = 'complete-secret';
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret: SECRET }, log: () => undefined, version: 'test' });
  });
  afterAll(async () => server?.close());

  it("the token's plugin, the last year's sources and smartflows, no countries; nothing with a refused token", async () => {
    const env = { CONVX_API_URL: `${server.url}/v1`, CONVX_TOKEN: await signDevelopmentToken(SECRET, 'shop', '1h') };
    const run = (...words: string[]) => cli(['__complete', ...words], { env, now: '2024-12-31T12:00:00Z' });
    expect((await run('report', '--plugin', '')).stdout).toBe('shop\n');
    expect((await run('items', '--smartflow', '')).stdout).toBe((await cli(['__complete', '--data', SAMPLES, 'items', '--smartflow', ''])).stdout);
    expect((await run('items', '--smartflow', '')).stdout).toMatch(/^sf-1\n/);
    expect((await run('drill', 'k')).stdout).toMatch(/^k-1\n/);
    expect((await run('report', '--country', '')).stdout).toBe('');
    const refused = await cli(['__complete', 'items', '--source', ''], { env: { ...env, CONVX_TOKEN: 'wrong' } });
    expect(refused).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});
