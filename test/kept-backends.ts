/**
 * cli() with local backends kept between commands, for the tests of what many commands print from
 * one dataset (formats, periods, flags, API mode against local mode; test/import*.test.ts and
 * test/split-plugins.test.ts compare it with another): a command on a directory reads, checks and
 * types its files before it asks anything (50-300 ms of CPU), and the same directory was read for
 * every command. A test of the open itself (data errors, warnings, data check) keeps cli().
 */
import type { Backend } from '../src/backend.js';
import { openDefaultBackend } from '../src/backends.js';
import type { BackendFactory } from '../src/context.js';
import { afterAll } from 'vitest';
import type { LocalBackend } from '../src/local/backend.js';
import { openLocalBackend } from '../src/local/open.js';
import type { ValidateResponse } from '../src/model/validation.js';
import type { RenderLimits } from '../src/validation/limits.js';
import { cli, onTerminal, suiteThreadsOption, type CliResult } from './helpers.js';

/** A cli() with kept backends, and close(), which closes them (the next command opens its dataset again). */
export interface KeptCli {
  (argv: string[], options?: Parameters<typeof cli>[1]): Promise<CliResult>;
  /**
   * The backend a command with --data path (and --plugin; `validation`: convx validate's, which
   * needs contacts, not orders) is lent, for a test's own queries: its close() gives it back.
   */
  backend(path: string, options?: { plugin?: string; validation?: boolean }): Promise<LocalBackend>;
  /** onTerminal() on these backends. */
  terminal(argv: string[], columns: number, env?: Record<string, string>, options?: { stderrIsTTY?: boolean }): ReturnType<typeof onTerminal>;
  close(): Promise<void>;
}

/** Which datasets a KeptCli lends backends of. */
export interface KeptOptions {
  /**
   * The path a dataset (--data, resolved) is kept under, or undefined for one not kept (opened as
   * convx opens it, e.g. a file the commands of a test write as well as read). By default every
   * dataset, under its own path.
   */
  keptAs?: (path: string) => string | undefined;
}

/** keptCli() for the tests of a file or describe block: its backends close after them. */
export function keptBackends(options: KeptOptions = {}): KeptCli {
  const kept = keptCli(options);
  afterAll(() => kept.close());
  return kept;
}

/**
 * A cli() whose command opens its local backend as convx does (openDefaultBackend, with the flags
 * and settings of that command) the first time a dataset is asked for with those flags (--data,
 * --plugin, --reference-currency, and validate's need of contacts), and is lent that same backend
 * on later commands: one command at a time (the next waits for the one before to close it; a
 * command that held two backends of one dataset and flags at once would wait for itself), and
 * its close() gives it back instead of closing it. The attribution is per order (see
 * sharedBackend of helpers.ts; a server answers every request of a dataset from one backend too),
 * so a command's answer is what it prints on a backend of its own; a dataset convx refuses is
 * refused again with the same error. API mode and the flags local mode refuses go the usual way.
 * A file replaced under its name (an update) needs close() first: the kept backend reads the old one.
 */
export function keptCli({ keptAs = (path) => path }: KeptOptions = {}): KeptCli {
  const kept = new Map<string, { opened: Promise<Backend>; turn: Promise<void> }>();
  const keyOf = (path: string, plugin: string | undefined, referenceCurrency?: string, validation = false) => JSON.stringify([path, plugin, referenceCurrency, validation]);
  /** The backend kept under key (opened by open the first time), once the command before gives it back. */
  const lend = async (key: string, open: () => Promise<Backend>): Promise<Backend> => {
    let entry = kept.get(key);
    if (!entry) kept.set(key, (entry = { opened: open(), turn: Promise.resolve() }));
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const before = entry.turn;
    entry.turn = before.then(() => mine);
    await before;
    try {
      return lent(await entry.opened, release);
    } catch (error) {
      release();
      throw error;
    }
  };
  const backends: BackendFactory = async (ctx, options) => {
    const { settings, globals } = ctx;
    const usual = settings.mode === 'api' || !settings.data || [globals.deliveryApi, globals.tokenFile, globals.timeout].some((flag) => flag !== undefined);
    const path = usual ? undefined : keptAs(ctx.resolvePath(settings.data!));
    if (path === undefined) return openDefaultBackend(ctx, options);
    return lend(keyOf(path, settings.plugin, globals.referenceCurrency, options.validation), () => openDefaultBackend(ctx, options));
  };
  // as openDefaultBackend opens it for a command with --data path (--plugin) and the suite's CONVX_THREADS
  const backend = (path: string, { plugin, validation = false }: { plugin?: string; validation?: boolean } = {}) =>
    lend(keyOf(path, plugin, undefined, validation), () =>
      openLocalBackend(path, { ...suiteThreadsOption(), ...(plugin !== undefined ? { plugin } : {}), ...(validation ? { require: ['contacts'] } : {}) }),
    ) as Promise<LocalBackend>;
  const run = (argv: string[], options: Parameters<typeof cli>[1] = {}) => cli(argv, { ...options, program: { backends } });
  const close = async () => {
    const entries = [...kept.values()];
    kept.clear();
    const all = await Promise.allSettled(entries.map(async (entry) => (await entry.turn, entry.opened)));
    await Promise.all(all.map((result) => (result.status === 'fulfilled' ? result.value.close() : undefined)));
  };
  const terminal: KeptCli['terminal'] = (argv, columns, env = {}, options = {}) => onTerminal(argv, columns, env, { ...options, program: { backends } });
  return Object.assign(run, { backend, close, terminal });
}

/** The backend as a command sees it, but that its close() ends the command's turn and leaves it open. */
function lent(backend: Backend, release: () => void): Backend {
  return new Proxy(backend, {
    get(target, name) {
      if (name === 'close') return async () => release();
      const value: unknown = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * Validations of datasets a test file does not change, each dataset's answered by the backend
 * keptBackends() lends convx validate (a server answers every request of a dataset from one too):
 * opening a dataset reads, checks and types its files, and a file's validations (request errors,
 * HTML checks, variables, audiences, render limits) asked it anew each time. A test of the open
 * itself opens its own.
 */
export function keptValidations(): (dir: string, body: unknown, renderLimits?: RenderLimits) => Promise<ValidateResponse> {
  const kept = keptBackends();
  return async (dir, body, renderLimits) => {
    const backend = await kept.backend(dir, { validation: true });
    try {
      return await backend.validateEmail(body, renderLimits);
    } finally {
      await backend.close();
    }
  };
}
