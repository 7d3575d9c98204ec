import { isAbsolute, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { Chalk, type ChalkInstance } from 'chalk';
import type { Backend } from './backend.js';
import { UsageError } from './errors.js';
import { FORMATS, type Format } from './output/format.js';
import { streamSink } from './output/sink.js';
import { ResultWriter } from './output/writer.js';

/** Everything a command may touch of the outside world; tests pass their own. */
export interface Io {
  stdout: Writable;
  stderr: Writable;
  stdoutIsTTY: boolean;
  stderrIsTTY: boolean;
  env: Record<string, string | undefined>;
  cwd: string;
  now: () => Date;
  /** Calls handler on the signal instead of the default (exit); returns the unsubscribe function. */
  onSignal(signal: 'SIGINT' | 'SIGTERM' | 'SIGHUP', handler: () => void): () => void;
}

export interface GlobalOptions {
  data?: string;
  plugin?: string;
  referenceCurrency?: string;
  format?: string;
  fields?: string;
  color: boolean;
  quiet?: boolean;
}

export interface Logger {
  /** Notes for a person (summaries, hints); silenced by --quiet. */
  info(message: string): void;
  warn(message: string): void;
  /** Transient progress on a terminal only; call done() to clear it. */
  progress(message: string): void;
  done(): void;
}

export interface Context {
  io: Io;
  globals: GlobalOptions;
  /** Colours for stdout and for stderr, each on only where it is a terminal. */
  chalk: ChalkInstance;
  errChalk: ChalkInstance;
  log: Logger;
  output: ResultWriter;
  format: Format;
  resolvePath(path: string): string;
  /** The dataset directory of local mode: --data, else CONVX_DATA. */
  dataDir(): string;
  openBackend(): Promise<Backend>;
}

function colorLevel(isTTY: boolean, env: Io['env'], enabled: boolean): 0 | 1 | 2 | 3 {
  if (!enabled) return 0;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return 0;
  const force = env.FORCE_COLOR;
  if (force !== undefined) {
    if (force === '0' || force === 'false') return 0;
    return force === '2' ? 2 : force === '3' ? 3 : 1;
  }
  return isTTY ? 1 : 0;
}

export function parseFormat(value: string | undefined, isTTY: boolean, allowed: readonly string[] = FORMATS): Format {
  if (value === undefined) return isTTY ? 'table' : 'tsv';
  if (!allowed.includes(value)) {
    throw new UsageError(`--format: "${value}" is not one of ${allowed.join(', ')}`);
  }
  return value as Format;
}

export function createContext(io: Io, globals: GlobalOptions): Context {
  const chalk = new Chalk({ level: colorLevel(io.stdoutIsTTY, io.env, globals.color) });
  const errChalk = new Chalk({ level: colorLevel(io.stderrIsTTY, io.env, globals.color) });
  const format = parseFormat(globals.format, io.stdoutIsTTY);
  const fields = globals.fields
    ?.split(',')
    .map((f) => f.trim())
    .filter(Boolean);
  let progressShown = false;
  const log: Logger = {
    info: (message) => {
      if (!globals.quiet) io.stderr.write(`${errChalk.dim(message)}\n`);
    },
    warn: (message) => io.stderr.write(`${errChalk.yellow('warning:')} ${message}\n`),
    progress: (message) => {
      if (globals.quiet || !io.stderrIsTTY) return;
      io.stderr.write(`\r\x1b[2K${message}`);
      progressShown = true;
    },
    done: () => {
      if (progressShown) io.stderr.write('\r\x1b[2K');
      progressShown = false;
    },
  };
  const resolvePath = (path: string) => (isAbsolute(path) ? path : resolve(io.cwd, path));
  const dataDir = () => {
    const dir = globals.data ?? io.env.CONVX_DATA;
    if (!dir) {
      throw new UsageError('no dataset: pass --data DIR or set CONVX_DATA', [], 'try: convx report --data samples/shop');
    }
    return resolvePath(dir);
  };
  return {
    io,
    globals,
    chalk,
    errChalk,
    log,
    format,
    output: new ResultWriter(streamSink(io.stdout), { format, chalk, ...(fields?.length ? { fields } : {}) }),
    resolvePath,
    dataDir,
    async openBackend() {
      const { openLocalBackend } = await import('./local/backend.js');
      return openLocalBackend(dataDir(), {
        ...(globals.plugin !== undefined ? { plugin: globals.plugin } : {}),
        ...(globals.referenceCurrency !== undefined ? { referenceCurrency: globals.referenceCurrency } : {}),
      });
    },
  };
}
