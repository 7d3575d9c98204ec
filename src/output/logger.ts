/**
 * The one place that prints to stderr for a command: notes, warnings, a verdict and the
 * transient progress line. Every message may quote a data value: none reaches the terminal raw
 * (terminal.ts).
 */
import type { Writable } from 'node:stream';
import type { ChalkInstance } from 'chalk';
import { safeLines, safeValue, wrapLines } from './terminal.js';

export interface Logger {
  /** Notes for a person (summaries, hints); silenced by --quiet. */
  info(message: string): void;
  warn(message: string): void;
  /** Why a run fails, after a label in red ("convx: not ready:"); never silenced. */
  failure(label: string, message: string): void;
  /** An error as the top-level handler prints it: "convx: error:" and the message, then its hint dimmed; never silenced. */
  error(error: { message: string; hint?: string | undefined }): void;
  /** Transient progress on a terminal only; call done() to clear it. */
  progress(message: string): void;
  done(): void;
}

export interface LoggerOptions {
  /** --quiet: no notes and no progress. */
  quiet: boolean;
  /** stderr is a terminal: the only place a progress line shows. */
  terminal: boolean;
  /** stderr's width on a terminal: notes wrap at spaces to it (never inside a word); undefined: as they are. */
  width?: number;
}

export function createLogger(stderr: Writable, chalk: ChalkInstance, { quiet, terminal, width }: LoggerOptions): Logger {
  let progressShown = false;
  return {
    info: (message) => {
      if (!quiet) stderr.write(`${chalk.dim(wrapLines(safeLines(message), width))}\n`);
    },
    warn: (message) => stderr.write(`${chalk.yellow('warning:')} ${safeLines(message)}\n`),
    failure: (label, message) => stderr.write(`${chalk.red(label)} ${safeLines(message)}\n`),
    error: ({ message, hint }) => {
      stderr.write(`${chalk.red('convx: error:')} ${safeLines(message)}\n`);
      if (hint) stderr.write(`${chalk.dim(`hint: ${safeLines(hint)}`)}\n`);
    },
    progress: (message) => {
      if (quiet || !terminal) return;
      stderr.write(`\r\x1b[2K${safeValue(message)}`);
      progressShown = true;
    },
    done: () => {
      if (progressShown) stderr.write('\r\x1b[2K');
      progressShown = false;
    },
  };
}
