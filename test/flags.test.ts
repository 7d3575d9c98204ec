/**
 * Issue 12, items 1 and 5: list flags accumulate and take codes in any case;
 * each command's --help lists the global flags it honours; messages name flags
 * as typed; commander's errors read like the rest; flags that do not apply are
 * errors; an FX table of rates to another currency is one line.
 */
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/commands/index.js';
import { commandFormats } from '../src/commands/globals.js';
import { UsageError } from '../src/errors.js';
import { parseItemsQuery, parseReportQuery } from '../src/model/query.js';
import { cli, SAMPLES, shop } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const PERIOD = ['--from', '2024-03-01', '--to', '2024-03-31'];

/** Orders in CZ, SK and AT, in EUR and CZK, each attributed to campaign k1. */
const countries = () =>
  shop({
    orders: [
      { id: 'cz-eur', contact: 'c1', at: '2024-03-02T10:00:00Z', country: 'CZ', currency: 'EUR' },
      { id: 'sk-eur', contact: 'c2', at: '2024-03-03T10:00:00Z', country: 'SK', currency: 'EUR' },
      { id: 'at-eur', contact: 'c3', at: '2024-03-04T10:00:00Z', country: 'AT', currency: 'EUR' },
      { id: 'cz-czk', contact: 'c4', at: '2024-03-05T10:00:00Z', country: 'CZ', currency: 'CZK' },
    ],
    touches: ['c1', 'c2', 'c3', 'c4'].map((contact) => ({ contact, at: '2024-03-01T00:00:00Z' })),
    fx: [['2024-03-01', 'CZK', '0.04']],
  });

async function orderIds(argv: string[]): Promise<string[]> {
  const run = await cli(['items', ...argv, '-o', 'json']);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return (JSON.parse(run.stdout).conversions as { orderId: string }[]).map((r) => r.orderId).sort();
}

/** samples/shop and a dataset of countries opened once and lent to the commands whose outputs the list flags' tests compare (kept-backends.ts). */
const kept = keptBackends();

describe('list flags', () => {
  it('accumulate over repeats and comma lists, in any case', async () => {
    const data = ['--data', countries(), ...PERIOD];
    expect(await orderIds([...data, '--country', 'CZ', '--country', 'SK'])).toEqual(['cz-czk', 'cz-eur', 'sk-eur']);
    expect(await orderIds([...data, '--country', 'cz,at', '--country', 'sk'])).toEqual(['at-eur', 'cz-czk', 'cz-eur', 'sk-eur']);
    expect(await orderIds([...data, '--currency', 'czk'])).toEqual(['cz-czk']);
    expect(await orderIds([...data, '--currency', 'eur', '--currency', 'Czk', '--country', 'cz'])).toEqual(['cz-czk', 'cz-eur']);
    // a report too: the repeated form prints exactly the comma form
    const repeated = await kept(['report', ...data, '--country', 'cz', '--country', 'SK', '-o', 'json']);
    const comma = await kept(['report', ...data, '--country', 'CZ,SK', '-o', 'json']);
    expect(repeated.code).toBe(0);
    expect(repeated.stdout).toBe(comma.stdout);
    expect(JSON.parse(comma.stdout).conversions[0].conversionsNumber).toBe(3);
  });

  it('are upper-cased and each counted once by the shared parser (CLI and server)', () => {
    const today = new Date('2024-05-01T00:00:00Z');
    expect(parseReportQuery({ country: 'cz,SK,cz', currency: 'eur' }, today)).toMatchObject({ country: ['CZ', 'SK'], currency: ['EUR'] });
    expect(parseItemsQuery({ dateFrom: '2024-01-01', dateTo: '2024-01-31', currency: 'czk, Eur' }).currency).toEqual(['CZK', 'EUR']);
  });

  it('reject a code of the wrong shape, naming the flag (and the parameter on the server)', async () => {
    const data = ['--data', countries(), ...PERIOD];
    const country = await cli(['report', ...data, '--country', 'CZ', '--country', 'CZE']);
    expect(country.code).toBe(2);
    expect(country.stdout).toBe('');
    expect(country.stderr).toBe('convx: error: --country: "CZE" is not a two-letter country code (e.g. CZ)\n');
    const currency = await cli(['items', ...data, '--currency', 'euro,usd,1x']);
    expect(currency.code).toBe(2);
    expect(currency.stderr).toMatch(/^convx: error: --currency: "euro", "1x" are not three-letter currency codes \(e\.g\. EUR\)\n$/);
    const both = await cli(['items', ...data, '--country', 'ß', '--currency', 'e']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/invalid flags:\n {2}--country: "ß" is not a two-letter country code.*\n {2}--currency: "e" is not a three-letter currency code/);
    const reference = await cli(['report', ...data, '--reference-currency', 'euro']);
    expect(reference.code).toBe(2);
    expect(reference.stderr).toMatch(/^convx: error: --reference-currency: "euro" is not a three-letter currency code/);
    let problems: unknown;
    try {
      parseReportQuery({ country: 'CZE' }, new Date());
    } catch (error) {
      problems = (error as UsageError).problems;
    }
    expect(problems).toEqual([{ parameter: 'country', message: '"CZE" is not a two-letter country code (e.g. CZ)' }]);
  });

  it('--sort accumulates too (items takes one field, and says so)', async () => {
    const repeated = await kept(['report', '--data', SAMPLES, ...PERIOD, '--sort', '-conversionsNumber', '--sort', 'name', '-o', 'json']);
    const comma = await kept(['report', '--data', SAMPLES, ...PERIOD, '--sort', '-conversionsNumber,name', '-o', 'json']);
    expect(repeated.code).toBe(0);
    expect(repeated.stdout).toBe(comma.stdout);
    const items = await cli(['items', '--data', SAMPLES, ...PERIOD, '--sort', 'datetime', '--sort', 'orderId']);
    expect(items.code).toBe(2);
    expect(items.stderr).toBe('convx: error: --sort: takes one field here\n');
  });

  it('--fields accumulates too', async () => {
    const run = await cli(['items', '--data', countries(), ...PERIOD, '--country', 'SK', '--fields', 'orderId', '--fields', 'country', '-o', 'csv']);
    expect(run.stdout).toBe('orderId,country\nsk-eur,SK\n');
  });
});

describe('help', () => {
  it("lists the global flags each command honours, with -o's own formats", async () => {
    const report = await cli(['report', '--help']);
    expect(report.code).toBe(0);
    const globals = report.stdout.slice(report.stdout.indexOf('Global Options:'));
    for (const flag of ['--data <dir>', '--api <url>', '--profile <name>', '--plugin <id>', '-o, --format <format>', '--fields <list>', '--reference-currency']) {
      expect(globals).toContain(flag);
    }
    expect(globals).not.toContain('--delivery-api');

    const serve = (await cli(['serve', '--help'])).stdout;
    expect(serve).toMatch(/Global Options:\n {2}--data <dir>/);
    expect(serve).not.toMatch(/--fields|--format|--api </);

    const validate = (await cli(['validate', '--help'])).stdout;
    expect(validate).toMatch(/-o, --format <format> +output format: table, json, github, junit,\n +html, sarif\n/);
    expect(validate).toContain('--delivery-api <url>');
    expect(validate).not.toContain('--fields');

    expect((await cli(['data', 'check', '--help'])).stdout).toMatch(/output format: table, json, jsonl\n/);

    // convx --help names every format some command prints (a CI engineer learns of -o github there), each once
    const top = (await cli(['--help'])).stdout.replace(/\s+/g, ' ');
    const told = /-o, --format <format> output format: ([a-z, ]+); some commands also ([a-z, ]+) \(their --help lists theirs\)/.exec(top);
    expect(told, top).not.toBeNull();
    const named = [...told![1]!.split(', '), ...told![2]!.split(', ')];
    const printed = new Set(COMMANDS.flatMap((c) => commandFormats(c)));
    expect([...named].sort()).toEqual([...printed].sort());
    for (const format of ['github', 'junit', 'sarif', 'html', 'markdown']) expect(named).toContain(format);
  });

  it('every command lists global flags and gives examples; the reporting ones two or three', async () => {
    for (const command of COMMANDS) {
      const { stdout, code } = await cli([...command.name.split(' '), '--help']);
      expect(code, command.name).toBe(0);
      expect(stdout, command.name).toContain('Global Options:');
      const examples = stdout.slice(stdout.indexOf('Examples:')).split('\n').slice(1).filter((l) => l.startsWith('  convx') || l.startsWith('  cat') || l.startsWith('  CONVX') || l.startsWith('  curl') || l.startsWith('  eval'));
      expect(examples.length, command.name).toBeGreaterThanOrEqual(2);
      if (['report', 'items', 'order', 'drill', 'validate', 'serve'].includes(command.name)) expect(examples.length, command.name).toBeLessThanOrEqual(3);
    }
  });
});

describe('messages', () => {
  it('name flags, not interface parameters', async () => {
    const run = await cli(['items', '--data', SAMPLES, '--from', '2024-03-02', '--to', '2024-03-01']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('convx: error: --from: 2024-03-02 is after --to 2024-03-01\n');
    const two = await cli(['items', '--data', SAMPLES, '--from', '2024-03-02', '--to', '2024-03-01', '--country', 'CZE']);
    expect(two.stderr).toBe('convx: error: invalid flags:\n  --from: 2024-03-02 is after --to 2024-03-01\n  --country: "CZE" is not a two-letter country code (e.g. CZ)\n');
    // the server's problem still names the query parameters
    expect(() => parseItemsQuery({ dateFrom: '2024-03-02', dateTo: '2024-03-01' })).toThrow('invalid parameter: dateFrom: 2024-03-02 is after dateTo 2024-03-01');
  });

  it('name -o as typed', async () => {
    expect((await cli(['report', '--data', SAMPLES, '-o', 'xml'])).stderr).toMatch(/^convx: error: -o: "xml" is not one of table, json, jsonl, csv, tsv, html, markdown\n/);
    expect((await cli(['items', '--data', SAMPLES, '--from', '2024-03-01', '--to', '2024-03-02', '-o', 'xml'])).stderr).toMatch(/^convx: error: -o: "xml" is not one of table, json, jsonl, csv, tsv\n/);
    expect((await cli(['report', '--data', SAMPLES, '--format=xml'])).stderr).toMatch(/^convx: error: --format: "xml" is not one of/);
  });

  it("prefix commander's own errors with convx: and exit 2", async () => {
    for (const [argv, message] of [
      [['report', '--bogus'], "convx: error: unknown option '--bogus'"],
      [['order'], "convx: error: missing required argument 'orderId'"],
      [['items', '--breakdown'], "convx: error: unknown option '--breakdown'"],
      [['report', '--from'], "convx: error: option '--from <date>' argument missing"],
    ] as const) {
      const run = await cli([...argv]);
      expect(run.code, argv.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr.startsWith(message), run.stderr).toBe(true);
    }
    // a look-up without its id names --stdin too
    expect((await cli(['order'])).stderr).toBe("convx: error: missing required argument 'orderId'\nhint: give an order id (or several), or pass --stdin to read them one a line\n");
    // a flag of another command says whose it is
    expect((await cli(['items', '--breakdown'])).stderr).toBe("convx: error: unknown option '--breakdown'\nhint: --breakdown is a flag of convx report, convx trend, convx total\n");
    // red like the rest on a terminal
    expect((await cli(['report', '--bogus'], { tty: true })).stderr).toMatch(/^\x1b\[31mconvx: error:\x1b\[39m unknown option/);
  });

  it('say in one line when fx holds rates to another reference currency only', async () => {
    const dir = shop({
      orders: [
        { id: 'o1', at: '2024-03-02T10:00:00Z', currency: 'EUR' },
        { id: 'o2', at: '2024-03-05T10:00:00Z', currency: 'PLN' },
        { id: 'o3', at: '2024-03-09T10:00:00Z', currency: 'EUR' },
      ],
      touches: [{ at: '2024-03-01T00:00:00Z' }],
      fx: [['2024-03-01', 'CZK', '0.04'], ['2024-03-01', 'PLN', '0.23']],
    });
    const run = await cli(['report', '--data', dir, ...PERIOD, '--reference-currency', 'czk']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('convx: error: fx holds rates to EUR only; no rates to CZK: pass --reference-currency EUR, or add fx rows with reference_currency CZK\n');
    // with rates to CZK in fx, missing days are still listed one by one
    const mixed = shop({
      orders: [{ id: 'o1', at: '2024-03-20T10:00:00Z', currency: 'EUR' }],
      touches: [{ at: '2024-03-01T00:00:00Z' }],
      fx: [['2024-03-01', 'EUR', '25', 'CZK']],
    });
    const days = await cli(['report', '--data', mixed, ...PERIOD, '--reference-currency', 'CZK']);
    expect(days.code).toBe(2);
    expect(days.stderr).toMatch(/exchange rates are missing\n {2}EUR on 2024-03-20: no rate in fx/);
  });
});

describe('flags that do not apply', () => {
  it('are errors naming the flag and what the command takes', async () => {
    const serve = await cli(['serve', '--data', SAMPLES, '--port', 'none', '--fields', 'id']);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toBe(
      'convx: error: --fields does not apply to convx serve\nhint: convx serve takes --data, --profile, --reference-currency, --no-color, --quiet (see convx serve --help)\n',
    );
    const token = await cli(['token', '--plugin', 'shop', '--data', SAMPLES, '-o', 'json']);
    expect(token.code).toBe(2);
    expect(token.stderr).toMatch(/^convx: error: --data and -o do not apply to convx token\n/);
    const check = await cli(['data', 'check', SAMPLES, '-o', 'csv']);
    expect(check.code).toBe(2);
    expect(check.stdout).toBe('');
    expect(check.stderr).toBe('convx: error: -o: "csv" is not one of table, json, jsonl\n');
    const validate = await cli(['validate', 'samples/deliveries/welcome.json', '--data', SAMPLES, '--reference-currency', 'EUR']);
    expect(validate.code).toBe(2);
    expect(validate.stderr).toMatch(/^convx: error: --reference-currency does not apply to convx validate\n/);
  });

  it('API-mode flags in local mode are errors', async () => {
    const run = await cli(['report', '--data', SAMPLES, ...PERIOD, '--timeout', '5', '--token-file', 'token.txt']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^convx: error: --token-file and --timeout work in API mode only/);
  });

  it('--data with --api is an error; from the environment the flag still wins', async () => {
    const both = await cli(['report', '--data', SAMPLES, '--api', 'http://127.0.0.1:9/v1']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--data and --api both set \(flags\)/);
    const env = await cli(['report', '--data', SAMPLES, ...PERIOD, '-o', 'json'], { env: { CONVX_API_URL: 'http://127.0.0.1:9/v1' } });
    expect(env.code).toBe(0);
  });

  it('the global flags a command honours still work after its name and before it', async () => {
    const after = await cli(['data', 'check', SAMPLES, '-o', 'json']);
    const before = await cli(['-o', 'json', 'data', 'check', SAMPLES]);
    expect(after.code).toBe(0);
    expect(before.stdout).toBe(after.stdout);
    expect(JSON.parse(after.stdout).ok).toBe(true);
  });
});
