/**
 * The backend comes from a factory given to run()/createProgram() (default:
 * the API or the local dataset, src/backends.ts). Each case runs real argv
 * in-process with a factory that opens the real local backend through the
 * default one and records what the command asked of it.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Backend } from '../src/backend.js';
import { openDefaultBackend } from '../src/backends.js';
import type { BackendFactory, OpenBackendOptions } from '../src/context.js';
import { run } from '../src/cli.js';
import { DataError } from '../src/errors.js';
import type { LocalBackend } from '../src/local/backend.js';
import { Database } from '../src/local/db.js';
import { openDataset } from '../src/local/open.js';
import { sql } from '../src/local/sql.js';
import { Capture, cli, SAMPLES, shop, tempDir } from './helpers.js';

/** Everything a factory saw: each opening's options, the methods called on the backend, and closes. */
interface Seen {
  opened: OpenBackendOptions[];
  calls: string[];
  closed: number;
}

/** The default factory's backend (the real one), every method call recorded; `override` replaces methods. */
function recording(override: Partial<Backend> = {}): { backends: BackendFactory; record: Seen } {
  const record: Seen = { opened: [], calls: [], closed: 0 };
  const backends: BackendFactory = async (ctx, options) => {
    record.opened.push(options);
    const real = await openDefaultBackend(ctx, options);
    return new Proxy(real, {
      get(target, property, receiver) {
        const method = Reflect.get(property in override ? override : target, property, receiver);
        if (typeof method !== 'function' || typeof property !== 'string') return method;
        return (...args: unknown[]) => {
          record.calls.push(property);
          if (property === 'close') record.closed++;
          return Reflect.apply(method, property in override ? override : target, args);
        };
      },
    });
  };
  return { backends, record };
}

async function runWith(argv: string[], backends: BackendFactory, env: Record<string, string> = {}) {
  const stdout = new Capture();
  const stderr = new Capture();
  const code = await run(
    argv,
    {
      stdin: Readable.from([]),
      stdinIsTTY: false,
      stdout,
      stderr,
      stdoutIsTTY: false,
      stderrIsTTY: false,
      env: { XDG_CONFIG_HOME: tempDir('convx-config-'), ...env },
      cwd: process.cwd(),
      now: () => new Date('2024-05-01T12:00:00Z'),
      onSignal: () => () => undefined,
    },
    { backends },
  );
  return { code, stdout: stdout.text, stderr: stderr.text };
}

const dir = shop({
  orders: [
    { id: 'o-1', at: '2024-03-02T10:00:00Z', net: 100, gross: 121 },
    { id: 'o-2', at: '2024-03-05T10:00:00Z', contact: 'c2', net: 50, gross: 60.5 },
  ],
  touches: [
    { at: '2024-03-01T10:00:00Z', source: 'k1' },
    { at: '2024-03-04T10:00:00Z', contact: 'c2', source: 'k2' },
  ],
});
const REPORT = ['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'csv'];

describe('the backend factory', () => {
  it('report asks the injected factory, prints what its backend reports, and closes it', async () => {
    const { backends, record } = recording();
    const result = await runWith(REPORT, backends);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(record.opened).toHaveLength(1);
    expect(record.opened[0]!.validation).toBeUndefined();
    expect(record.calls).toContain('report');
    expect(record.calls.at(-1)).toBe('close');
    expect(record.closed).toBe(1);
    // the same bytes as the default backend gives
    expect(result.stdout).toBe((await cli(REPORT)).stdout);
    expect(result.stdout).toContain('k1');
  });

  it('validate asks for a validation backend (contacts, not orders)', async () => {
    const { backends, record } = recording();
    const result = await runWith(['validate', 'samples/deliveries/welcome.json', '--data', SAMPLES, '-o', 'json'], backends);
    expect(result.code).toBe(0);
    expect(record.opened).toEqual([{ validation: true }]);
    expect(record.calls).toContain('validateEmail');
    expect(record.closed).toBe(1);
  });

  it("a data error from the backend is the command's error: exit 2, the message on stderr, nothing on stdout, the backend closed", async () => {
    const { backends, record } = recording({
      report: async () => {
        throw new DataError('orders.csv: injected failure', ['line 2: amount_w_tax is not a number']);
      },
    });
    const result = await runWith(REPORT, backends);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('convx: error: orders.csv: injected failure\n  line 2: amount_w_tax is not a number\n');
    expect(record.calls.slice(-2)).toEqual(['report', 'close']);
  });

  it('drill opens one backend for its listing and its report', async () => {
    const { backends, record } = recording();
    const result = await runWith(['drill', 'k1', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'csv'], backends);
    expect(result.code).toBe(0);
    expect(record.opened).toHaveLength(1);
    expect(record.closed).toBe(1);
    expect(result.stdout).toBe(
      (await cli(['drill', 'k1', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'csv'])).stdout,
    );
  });

  it('the flags that do not apply in local mode are still refused by the default factory', async () => {
    const { backends, record } = recording();
    const result = await runWith([...REPORT, '--timeout', '5'], backends);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('convx: error: --timeout works in API mode only');
    expect(record.opened).toHaveLength(1);
    expect(record.calls).toEqual([]);
  });
});

describe('CONVX_THREADS', () => {
  const threadsOf = async (db: Database) => Number((await db.one<{ t: unknown }>(sql`SELECT current_setting('threads') AS t`))!.t);

  it('sets the DuckDB threads of local mode, with the same answer; unset, DuckDB takes one per core', async () => {
    const seen: number[] = [];
    const backends: BackendFactory = async (ctx, options) => {
      const real = (await openDefaultBackend(ctx, options)) as LocalBackend;
      seen.push(await threadsOf(real.scope.db));
      return real;
    };
    const one = await runWith(REPORT, backends, { CONVX_THREADS: '1' });
    const three = await runWith(REPORT, backends, { CONVX_THREADS: ' 3 ' });
    const unset = await runWith(REPORT, backends, { CONVX_THREADS: '' });
    const fresh = await Database.open();
    const cores = await threadsOf(fresh);
    fresh.close();
    expect(seen).toEqual([1, 3, cores]);
    expect([one.code, three.code, unset.code]).toEqual([0, 0, 0]);
    expect(three.stdout).toBe(one.stdout);
    expect(unset.stdout).toBe(one.stdout);
  });

  it("a command's DuckDB database is never checkpointed (it ends with the command); an import's keeps DuckDB's 16 MB", async () => {
    // Since DuckDB 1.4 an in-memory database is checkpointed as its log grows: a command's, dropped when it ends, never
    // needs it, and no interrupt stops one (Ctrl-C waited for it). A threshold out of reach means none.
    const threshold = async (db: Database) => (await db.one<{ v: string }>(sql`SELECT current_setting('checkpoint_threshold') AS v`))!.v;
    const seen: string[] = [];
    const backends: BackendFactory = async (ctx, options) => {
      const real = (await openDefaultBackend(ctx, options)) as LocalBackend;
      seen.push(await threshold(real.scope.db));
      return real;
    };
    expect((await runWith(REPORT, backends, { CONVX_THREADS: '1' })).code).toBe(0);
    // DuckDB's words for its default and for convx's threshold, from instances of their own
    const [byDefault, none] = await Promise.all([Database.open(), Database.open(':memory:', { noCheckpoints: true })]);
    const [defaultThreshold, noThreshold] = [await threshold(byDefault), await threshold(none)];
    byDefault.close();
    none.close();
    expect(noThreshold).not.toBe(defaultThreshold);
    expect(seen).toEqual([noThreshold]);
    const imported = await openDataset(SAMPLES, [], { materialise: true, reuse: true, threads: 1 });
    try {
      expect(await threshold(imported.db)).toBe(defaultThreshold);
    } finally {
      imported.db.close();
    }
  });

  it('anything but a whole number from 1 to 256 is a usage error naming it', async () => {
    for (const value of ['0', '257', '1.5', 'two', '-1']) {
      const { backends } = recording();
      const result = await runWith(REPORT, backends, { CONVX_THREADS: value });
      expect(result.code, value).toBe(2);
      expect(result.stderr).toContain(`CONVX_THREADS must be a whole number of DuckDB threads from 1 to 256 (got "${value}")`);
      expect(result.stdout).toBe('');
    }
  });
});
