import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { run, type ProgramOptions } from '../src/cli.js';
import type { Io } from '../src/context.js';
import type { LocalBackend } from '../src/local/backend.js';
import { openLocalBackend, type LocalOpenOptions } from '../src/local/open.js';
import type { ItemsQuery, ReportQuery } from '../src/model/query.js';
import { keptBackends, type KeptCli } from './kept-backends.js';
import { tempDir } from './temp.js';
import { afterAll, beforeAll } from 'vitest';

export { tempDir };

type Cell = string | number | boolean | null | undefined;

/** CSV text from a header and rows (values with commas or quotes are quoted). */
export function csv(header: string[], rows: Cell[][]): string {
  const cell = (v: Cell) => {
    if (v === null || v === undefined) return '';
    const s = String(v);
    return /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  return [header, ...rows].map((r) => r.map(cell).join(',')).join('\n') + '\n';
}

/** Writes files (path -> content) into a new temporary dataset directory. */
export function dataset(files: Record<string, string | Buffer>): string {
  const dir = tempDir();
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

export const ORDER_HEADER = [
  'order_id',
  'contact_id',
  'datetime',
  'currency',
  'amount_wo_tax',
  'amount_w_tax',
  'country',
  'is_refund',
  'status',
];
export const TOUCH_HEADER = ['contact_id', 'datetime', 'touch', 'source_type', 'source_id'];
export const FX_HEADER = ['date', 'currency', 'rate', 'reference_currency'];
export const SOURCE_HEADER = [
  'source_type',
  'source_id',
  'name',
  'campaign_id',
  'smartflow_id',
  'smartflow_name',
  'delivery_id',
  'delivery_name',
  'started_at',
];

export interface OrderRow {
  id: string;
  contact?: string;
  at: string;
  currency?: string;
  net?: string | number;
  gross?: string | number;
  country?: string;
  refund?: boolean;
  status?: string;
}

export interface TouchRow {
  contact?: string;
  at: string;
  touch?: string;
  type?: string;
  source?: string;
}

/** A dataset from terse order and touch rows, plus optional fx, sources and other files. */
export function shop(spec: {
  orders: OrderRow[];
  touches: TouchRow[];
  fx?: [string, string, string | number, string?][];
  sources?: Cell[][];
  files?: Record<string, string>;
}): string {
  const files: Record<string, string> = {
    'orders.csv': csv(
      ORDER_HEADER,
      spec.orders.map((o) => [
        o.id,
        o.contact ?? 'c1',
        o.at,
        o.currency ?? 'EUR',
        o.net ?? 100,
        o.gross ?? o.net ?? 121,
        o.country ?? 'CZ',
        o.refund ?? false,
        o.status ?? 'completed',
      ]),
    ),
    'touches.csv': csv(
      TOUCH_HEADER,
      spec.touches.map((t) => [t.contact ?? 'c1', t.at, t.touch ?? 'click', t.type ?? 'campaign', t.source ?? 'k1']),
    ),
    ...spec.files,
  };
  if (spec.fx) files['fx.csv'] = csv(FX_HEADER, spec.fx.map(([d, c, r, ref]) => [d, c, r, ref ?? 'EUR']));
  if (spec.sources) files['sources.csv'] = csv(SOURCE_HEADER, spec.sources);
  return dataset(files);
}

/** The suite's DuckDB threads (test/setup.ts) for a command run in process: its env does not inherit process.env. */
export function suiteThreads(): Record<string, string> {
  return process.env.CONVX_THREADS ? { CONVX_THREADS: process.env.CONVX_THREADS } : {};
}

/** The suite's DuckDB threads as the options of openLocalBackend. */
export function suiteThreadsOption(): { threads?: number } {
  return process.env.CONVX_THREADS ? { threads: Number(process.env.CONVX_THREADS) } : {};
}

export async function withBackend<T>(
  dir: string,
  work: (backend: LocalBackend) => Promise<T>,
  options: LocalOpenOptions = {},
): Promise<T> {
  const backend = await openLocalBackend(dir, { ...suiteThreadsOption(), ...options });
  try {
    return await work(backend);
  } finally {
    await backend.close();
  }
}

/**
 * One local backend on dir for the tests of a describe block or file (opened before them, closed
 * after), where they compare with reference answers: a command opens its own, but the attribution
 * is per order, so what one period's query leaves attributed never changes another's answer.
 */
export function sharedBackend(dir: string, options: LocalOpenOptions = {}): () => LocalBackend {
  let backend: LocalBackend | undefined;
  beforeAll(async () => {
    backend = await openLocalBackend(dir, { ...suiteThreadsOption(), ...options });
  });
  afterAll(async () => {
    await backend?.close();
  });
  return () => backend!;
}

export function reportQuery(dateFrom: string, dateTo: string, extra: Partial<ReportQuery> = {}): ReportQuery {
  return {
    dateFrom,
    dateTo,
    limit: 1000,
    offset: 0,
    sort: [
      { field: 'conversionsAmountWTax', descending: true },
      { field: 'name', descending: false },
    ],
    ...extra,
  };
}

export function itemsQuery(dateFrom: string, dateTo: string, extra: Partial<ItemsQuery> = {}): ItemsQuery {
  return { dateFrom, dateTo, limit: 1000, offset: 0, sort: [{ field: 'datetime', descending: false }], ...extra };
}

let configHome: string | undefined;
/**
 * An empty config directory, so no test reads the real ~/.config: one per test file (the files of a
 * worker share this module, and test/setup.ts removes the directory after each file).
 */
function isolatedConfig(): string {
  if (configHome === undefined || !existsSync(configHome)) configHome = tempDir('convx-config-');
  return configHome;
}

export class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** The pauses API mode asked for before its retries, in ms (absent: none). */
  slept?: number[];
}

/**
 * Runs convx in-process with captured output (`program`: the backend factories run() is given, else the default ones;
 * `stdout`: a stream of the test's own instead of the capture, e.g. one whose writes fail: the result's stdout is then '';
 * `stderr`: a capture of the test's own, to read while the command runs; `onSignalExit`: where the command registers what it
 * says when a signal ends the process, as bin/convx.js takes it).
 */
export async function cli(
  argv: string[],
  options: { env?: Record<string, string>; tty?: boolean; now?: string; cwd?: string; stdin?: string; program?: ProgramOptions; stdout?: Writable; stderr?: Capture; onSignalExit?: Io['onSignalExit'] } = {},
): Promise<CliResult> {
  const stdout = new Capture();
  const stderr = options.stderr ?? new Capture();
  const slept: number[] = [];
  const io: Io = {
    stdin: Readable.from(options.stdin === undefined ? [] : [options.stdin]),
    stdinIsTTY: false,
    stdout: options.stdout ?? stdout,
    stderr,
    stdoutIsTTY: options.tty ?? false,
    stderrIsTTY: options.tty ?? false,
    env: { XDG_CONFIG_HOME: isolatedConfig(), ...suiteThreads(), ...options.env },
    cwd: options.cwd ?? process.cwd(),
    now: () => new Date(options.now ?? '2024-05-01T12:00:00Z'),
    // API mode's pauses between retries: recorded, and a moment each instead of up to seconds.
    sleep: (ms) => {
      slept.push(ms);
      return new Promise((resolve) => setTimeout(resolve, Math.min(ms, 5)));
    },
    onSignal: () => () => undefined,
    ...(options.onSignalExit ? { onSignalExit: options.onSignalExit } : {}),
  };
  const code = await run(argv, io, options.program);
  return { code, stdout: stdout.text, stderr: stderr.text, ...(slept.length ? { slept } : {}) };
}

/**
 * Runs `convx serve ARGV` in process, as cli() runs a command (the flags parsed and passed to the
 * server by the same code as the built binary), until it logs that it listens: its URL, and stop(),
 * its SIGTERM handler run as the process would on the signal, which resolves to the exit code.
 */
export async function serveInProcess(
  argv: string[],
  env: Record<string, string> = {},
  cwd = process.cwd(),
): Promise<{ url: string; stop: () => Promise<number>; log: () => string; signal: (name: NodeJS.Signals) => void }> {
  const stderr = new Capture();
  const handlers = new Map<string, () => void>();
  const io: Io = {
    stdin: Readable.from([]),
    stdinIsTTY: false,
    stdout: new Capture(),
    stderr,
    stdoutIsTTY: false,
    stderrIsTTY: false,
    env: { XDG_CONFIG_HOME: isolatedConfig(), ...suiteThreads(), ...env },
    cwd,
    now: () => new Date(),
    onSignal: (signal, handler) => {
      handlers.set(signal, handler);
      return () => handlers.delete(signal);
    },
  };
  const exited = run(['serve', ...argv], io);
  let code: number | undefined;
  void exited.then((c) => (code = c));
  const began = Date.now();
  for (;;) {
    const listening = /"msg":"listening".*"url":"([^"]+)"/.exec(stderr.text);
    if (listening) {
      return { url: listening[1]!, stop: () => (handlers.get('SIGTERM')?.(), exited), log: () => stderr.text, signal: (name) => handlers.get(name)?.() };
    }
    if (code !== undefined || Date.now() - began > 20_000) throw new Error(`convx serve did not start (exit ${code}): ${stderr.text}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const SAMPLES = join(import.meta.dirname, '..', 'samples', 'shop');

/** Plugins A and B with one order each (o-a in EUR, o-b in CZK), both attributed to campaign "shared". */
export function twoPluginFiles(): Record<string, string> {
  return {
    'orders.csv': csv(
      ['plugin_id', 'order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'],
      [
        ['A', 'oa', 'c1', '2024-03-02T10:00:00Z', 'EUR', 10, 12],
        ['B', 'ob', 'c1', '2024-03-02T10:00:00Z', 'CZK', 200, 242],
      ],
    ),
    'touches.csv': csv(
      ['plugin_id', 'contact_id', 'datetime', 'touch', 'source_type', 'source_id'],
      [
        ['A', 'c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'shared'],
        ['B', 'c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'shared'],
        ['B', 'c2', '2024-03-01T00:00:00Z', 'click', 'smartflow', 'n1'],
      ],
    ),
  };
}

/** convx in-process with stdout a terminal of the given width (a TTY stream reporting `columns`); stderr too with `stderrIsTTY`; `program` as cli()'s. */
export async function onTerminal(argv: string[], columns: number, env: Record<string, string> = {}, { stderrIsTTY = false, program }: { stderrIsTTY?: boolean; program?: ProgramOptions } = {}) {
  const stdout = Object.assign(new Capture(), { isTTY: true, columns });
  const stderr = stderrIsTTY ? Object.assign(new Capture(), { isTTY: true, columns }) : new Capture();
  const io: Io = {
    stdin: Readable.from([]),
    stdinIsTTY: false,
    stdout,
    stderr,
    stdoutIsTTY: true,
    stderrIsTTY,
    env: { XDG_CONFIG_HOME: tempDir('convx-config-'), NO_COLOR: '1', ...suiteThreads(), ...env },
    cwd: process.cwd(),
    now: () => new Date('2024-05-01T12:00:00Z'),
    onSignal: () => () => undefined,
  };
  const code = await run(argv, io, program);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** A loopback server answering with a script, for the faults the real server cannot produce. */
export interface Scripted {
  url: string;
  /** Each request's URL and Authorization header, in order. */
  requests: { url: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

/** Starts a Scripted server on a free loopback port; handler answers each request (n counts from 1). */
export async function scripted(handler: (req: IncomingMessage, res: ServerResponse, n: number) => void): Promise<Scripted> {
  const requests: Scripted['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({ url: req.url ?? '', authorization: req.headers.authorization });
    handler(req, res, requests.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * samples/shop served by `convx serve` on a loopback port for the tests of a describe block
 * (started before them, closed after): its URL, a token of plugin shop signed with `secret`,
 * and a GET of a path with query parameters and that token.
 */
export function servedSamples(secret: string): { url: () => string; token: () => string; get: (path: string, params: Readonly<Record<string, string | undefined>>, headers?: Record<string, string>) => Promise<Response> } {
  let server: { url: string; close(): Promise<void> } | undefined;
  let token = '';
  beforeAll(async () => {
    const { startServer } = await import('../src/server/start.js');
    const { signDevelopmentToken } = await import('../src/server/auth.js');
    server = await startServer({ dir: SAMPLES, host: '127.0.0.1', port: 0, auth: { secret }, log: () => undefined, version: 'test' });
    token = await signDevelopmentToken(secret, 'shop', '1h');
  });
  afterAll(async () => {
    await server?.close();
  });
  return {
    url: () => server!.url,
    token: () => token,
    get: (path, params, headers = {}) => fetch(`${server!.url}${path}?${new URLSearchParams(params as Record<string, string>)}`, { headers: { authorization: `Bearer ${token}`, ...headers } }),
  };
}

/**
 * A dataset made by `make` and served by `convx serve` on a loopback port for the tests of a file or
 * describe block (made and started before them, closed after): `local` runs convx on the directory
 * (with more environment) on a backend opened once and lent to each command (`kept`, kept-backends.ts,
 * for commands of a test's own on it), `api` in API mode against the server with a token of plugin
 * default (`url` and `token` for requests of a test's own); either with text on stdin.
 */
export function servedDataset(make: () => string): {
  dir: () => string;
  url: () => string;
  token: () => string;
  local: (argv: string[], env?: Record<string, string>, stdin?: string) => Promise<CliResult>;
  api: (argv: string[], stdin?: string) => Promise<CliResult>;
  kept: KeptCli;
} {
  const kept = keptBackends();
  const secret = 'test-secret-that-is-long-enough';
  let dir = '';
  let server: { url: string; close(): Promise<void> } | undefined;
  let token = '';
  beforeAll(async () => {
    const { startServer } = await import('../src/server/start.js');
    const { signDevelopmentToken } = await import('../src/server/auth.js');
    dir = make();
    server = await startServer({ dir, host: '127.0.0.1', port: 0, auth: { secret }, log: () => undefined, version: 'test' });
    token = await signDevelopmentToken(secret, 'default', '1h');
  });
  afterAll(async () => {
    await server?.close();
  });
  return {
    dir: () => dir,
    url: () => server!.url,
    token: () => token,
    local: (argv, env = {}, stdin) => kept([...argv, '--data', dir], { env, ...(stdin === undefined ? {} : { stdin }) }),
    api: (argv, stdin) => cli([...argv, '--api', `${server!.url}/v1`], { env: { CONVX_TOKEN: token }, ...(stdin === undefined ? {} : { stdin }) }),
    kept,
  };
}
