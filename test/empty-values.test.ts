/**
 * An empty value is refused, never read as absent (a script's unset variable, `--source "$SRC"`,
 * reported every source): every flag that takes a value, of every command and the global ones it
 * honours, taken from the option tables; every query parameter on the server, a 400 naming it;
 * API mode as local mode.
 */
import { describe, expect, it } from 'vitest';
import { commandGlobals } from '../src/commands/globals.js';
import { COMMANDS } from '../src/commands/index.js';
import { GLOBAL_OPTIONS } from '../src/globals.js';
import { EMPTY_REQUIRED_VALUE, EMPTY_VALUE, field, flagName, parameters, type Operation } from '../src/model/parameters.js';
import { cli, SAMPLES, servedSamples } from './helpers.js';

/** The global flags some command cannot run without (token's --plugin): an empty one is not met with "or leave it out". */
const REQUIRED = new Set(COMMANDS.flatMap((command) => command.requiredGlobals ?? []));
const REFUSED = (flag: string) => `convx: error: ${flag}: ${REQUIRED.has(flag) ? EMPTY_REQUIRED_VALUE : EMPTY_VALUE}\nhint: an unset shell variable gives an empty value\n`;

/** Each command with the flags of its own and the global flags it honours that take a value (`<x>`). */
const FLAGS = COMMANDS.map((command) => {
  const globals = GLOBAL_OPTIONS.map((o) => o.flags).filter((flags) => commandGlobals(command).includes(flagName(flags)));
  const flags = [...(command.options ?? []).map((o) => o.flags), ...globals].filter((flags) => /<[^>]+>/.test(flags));
  return [command.name, flags.map(flagName)] as const;
});

describe('every argument refuses an empty one', () => {
  // Each command that takes arguments, with an empty one where its first goes (and after a given one, for several).
  const WITH_ARGS = COMMANDS.filter((command) => command.args !== undefined);

  it('names the argument in words: one of alternatives too', async () => {
    expect((await cli(['drill', ''])).stderr).toBe('convx: error: the detailUrl, sourceId or name argument is empty\nhint: an unset shell variable gives an empty value\n');
    expect((await cli(['contact', ''])).stderr).toMatch(/^convx: error: the contact argument is empty\n/);
  });

  it('has the commands to try', () => {
    expect(WITH_ARGS.map((c) => c.name)).toEqual(expect.arrayContaining(['order', 'contact', 'drill', 'validate', 'data check', 'config set']));
  });

  it.each(WITH_ARGS.map((c) => [c.name, c.args!] as const))('%s %s', async (command, usage) => {
    const names = usage.split(' ');
    const alternatives = names[0]!.replace(/\.\.\.|[<>[\]]/g, '').split('|');
    const first = `the ${alternatives.length > 1 ? `${alternatives.slice(0, -1).join(', ')} or ${alternatives.at(-1)}` : alternatives[0]} argument`;
    // The required arguments after the first given, so that the empty first is what is wrong.
    const rest = names.slice(1).filter((name) => name.startsWith('<')).map(() => 'x');
    const run = await cli([...command.split(' '), '', ...rest]);
    expect([run.code, run.stdout, run.stderr]).toEqual([2, '', `convx: error: ${first} is empty\nhint: an unset shell variable gives an empty value\n`]);
    if (usage.endsWith('...]') || usage.endsWith('...>')) {
      const later = await cli([...command.split(' '), 'x', '']);
      expect([later.code, later.stderr]).toEqual([2, `convx: error: ${first} is empty\nhint: an unset shell variable gives an empty value\n`]);
    }
  });
});

describe('every flag that takes a value refuses an empty one', () => {
  it('has the flags to try (an empty it.each would pass with nothing tested)', () => {
    const named = FLAGS.flatMap(([command, flags]) => flags.map((flag) => `${command} ${flag}`));
    expect(named).toEqual(
      expect.arrayContaining(['items --source', 'report --query', 'items --plugin', 'items --sort', 'items --fields', 'items --data', 'items --tz', 'serve --host', 'serve --jwt-issuer']),
    );
  });

  it.each(FLAGS.filter(([, flags]) => flags.length))('%s: %s', async (command, flags) => {
    for (const flag of flags) {
      for (const given of [[flag, ''], [`${flag}=`]]) {
        const run = await cli([...command.split(' '), ...given]);
        expect([run.code, run.stdout, run.stderr], given.join(' ')).toEqual([2, '', REFUSED(flag)]);
      }
    }
  });

  it("token's --plugin, which it cannot run without: give a value, not \"or leave it out\"", async () => {
    expect([...REQUIRED]).toEqual(['--plugin']);
    const token = await cli(['token', '--plugin', ''], { env: { CONVX_JWT_SECRET: 'empty-values-secret-long-enough' } });
    expect([token.code, token.stdout, token.stderr]).toEqual([2, '', 'convx: error: --plugin: is empty: give a value\nhint: an unset shell variable gives an empty value\n']);
    // left out, token says it needs it
    const missing = await cli(['token'], { env: { CONVX_JWT_SECRET: 'empty-values-secret-long-enough' } });
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('--plugin <id> is required')]);
  });

  it('-q as typed, and a list flag repeated: the empty repeat is refused', async () => {
    const query = await cli(['report', '--data', SAMPLES, '--month', '2024-03', '-q', '']);
    expect([query.code, query.stdout, query.stderr]).toEqual([2, '', REFUSED('--query')]);
    const country = await cli(['items', '--data', SAMPLES, '--month', '2024-03', '--country', 'CZ', '--country', '']);
    expect([country.code, country.stdout, country.stderr]).toEqual([2, '', REFUSED('--country')]);
  });

  it('a list of nothing but commas is refused too (--country, --fields)', async () => {
    const country = await cli(['items', '--data', SAMPLES, '--month', '2024-03', '--country', ' , ']);
    expect([country.code, country.stdout]).toEqual([2, '']);
    expect(country.stderr).toBe('convx: error: --country: " , " holds no two-letter country codes (e.g. CZ)\n');
    const fields = await cli(['items', '--data', SAMPLES, '--month', '2024-03', '--fields', ',']);
    expect([fields.code, fields.stdout, fields.stderr]).toEqual([2, '', 'convx: error: --fields: "," names no field\n']);
  });
});

describe('the server refuses an empty query parameter, a 400 naming it; API mode prints what local mode prints', () => {
  const served = servedSamples('empty-values-secret-long-enough');
  const PERIOD = { dateFrom: '2024-03-01', dateTo: '2024-03-31' };
  const ROUTES: Record<Operation, string> = { report: '/v1/conversions', items: '/v1/conversions/items', trend: '/v1/conversions/timeframes', total: '/v1/conversions/total' };
  const PARAMETERS = (Object.keys(ROUTES) as Operation[]).map((operation) => [operation, parameters(operation).filter((p) => !field(p, 'pathOnly')).map((p) => p.name)] as const);

  it('has the parameters to try', () => {
    const named = PARAMETERS.flatMap(([operation, names]) => names.map((name) => `${operation} ${name}`));
    expect(named).toEqual(expect.arrayContaining(['items sourceId', 'report q', 'report sort', 'items country', 'trend top']));
  });

  it.each(PARAMETERS)('%s: %s', async (operation, names) => {
    for (const name of names) {
      const res = await served.get(ROUTES[operation], { ...PERIOD, [name]: '' });
      expect(res.status, name).toBe(400);
      const body = (await res.json()) as { type: string; errors: { parameter: string; message: string }[] };
      expect(body.type).toBe('urn:convx:problem:invalid-parameters');
      expect(body.errors, name).toEqual([{ parameter: name, message: EMPTY_VALUE }]);
    }
  });

  it("a per-source alias's query string too", async () => {
    const res = await served.get('/v1/campaigns/k-1/conversions', { ...PERIOD, sourceId: '' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: unknown[] }).errors).toEqual([{ parameter: 'sourceId', message: EMPTY_VALUE }]);
  });

  it('items --source "" (the report of the issue): exit 2 in both modes, nothing on stdout', async () => {
    const argv = ['items', '--month', '2024-03', '--source', ''];
    const local = await cli([...argv, '--data', SAMPLES]);
    const api = await cli([...argv, '--api', `${served.url()}/v1`], { env: { CONVX_TOKEN: served.token() } });
    expect([local.code, local.stdout, local.stderr]).toEqual([2, '', REFUSED('--source')]);
    expect(api).toEqual(local);
  });
});
