/**
 * The completion engine (`convx __complete WORDS…`, commands/complete.ts): candidates from the
 * command registry, the global flags and the parameters table; the values of the data through
 * Backend.lookup, in local mode (files as they are, and a LocalBackend's scope) and in API mode
 * against a loopback server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLookups } from '../src/local/lookups.js';
import { openLocalBackend } from '../src/local/open.js';
import { candidates, dataFlags } from '../src/commands/complete.js';
import { COMMANDS } from '../src/commands/index.js';
import { commandGlobals } from '../src/commands/globals.js';
import { field, parameters } from '../src/model/parameters.js';
import { SOURCE_TYPES } from '../src/model/shapes.js';
import { signDevelopmentToken } from '../src/server/auth.js';
import { startServer, type RunningServer } from '../src/server/start.js';
import { cli, dataset, SAMPLES, twoPluginFiles, suiteThreadsOption } from './helpers.js';

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
    expect((await run('report', '--smartflow', '')).stdout).toBe((await cli(['__complete', '--data', SAMPLES, 'report', '--smartflow', ''])).stdout);
    expect((await run('drill', 'k')).stdout).toMatch(/^k-1\n/);
    expect((await run('report', '--country', '')).stdout).toBe('');
    const refused = await cli(['__complete', 'report', '--source', ''], { env: { ...env, CONVX_TOKEN: 'wrong' } });
    expect(refused).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});
