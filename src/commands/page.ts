/**
 * Where a page (-o html, output/html.ts) goes: stdout, or with --output a file replaced whole (never
 * half-written; a link's file, or a FIFO or a terminal written into: writeOutputFile); --open shows that file in the default browser, on a desktop only. Shared by the
 * commands that print pages (commands/globals.ts PAGE_COMMANDS).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants, readlinkSync, statSync, type Stats } from 'node:fs';
import { rm, writeFile, rename } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Context } from '../context.js';
import { OutputError, UsageError, writeFailure } from '../errors.js';
import { keepAccess, writtenFile } from '../local/staging.js';
import type { TimeframesResponse } from '../model/types.js';
import { packageVersion } from '../version.js';
import { isCI, type FilterFlag } from './shared.js';

/** The page flags as a handler gets them (options.ts PAGE_OPTIONS). */
export interface PageFlags {
  output?: string | undefined;
  open?: boolean | undefined;
}

/**
 * --output and --open belong to -o html, and --open to --output; a page has its own columns and one
 * row per source or bucket (no --fields, no --breakdown). Usage errors before any work is done.
 */
export function checkPageFlags(ctx: Context, flags: PageFlags & { breakdown?: boolean | undefined }): void {
  const given = [flags.output !== undefined ? '--output' : undefined, flags.open ? '--open' : undefined].filter((f): f is string => f !== undefined);
  if (given.length && ctx.format !== 'html') {
    throw new UsageError(`${given.join(' and ')} ${given.length === 1 ? 'applies' : 'apply'} to -o html only`, [], 'add -o html for a page to share; other formats go to stdout (redirect it to a file)');
  }
  if (flags.open && flags.output === undefined) {
    throw new UsageError('--open opens the page written by --output', [], 'add --output FILE, e.g. --output report.html --open');
  }
  if (ctx.format !== 'html') return;
  if (flags.breakdown) throw new UsageError('--breakdown does not apply to -o html', [], 'the page has one row per source or bucket; -o csv --breakdown gives one per currency');
  if (ctx.globals.fields !== undefined) throw new UsageError('--fields does not apply to -o html', [], 'the page has its own columns; -o json or csv take --fields');
}

/** The filters of a request as the page's header names them: "--country cz". */
export function filterWords(filters: readonly FilterFlag[]): string[] {
  return filters.map((f) => `${f.flag ?? f.parameter} ${f.value}`);
}

/**
 * Writes text to the file --output (or --update-baseline) names, never half of it where a reader
 * could see it, and into what the name stands for:
 * - a regular file, or none: a temporary file beside it, then renamed over it (keeping the owner
 *   and permissions of the file it replaces, local/staging.ts keepAccess), so that a reader never
 *   sees half a page and a failure leaves the old file (or none);
 * - a symbolic link: the file it points to, the same way (the link stays; a link to nothing is
 *   refused, as `data import --into` refuses it: local/staging.ts writtenFile);
 * - this process's stdout by a name (/dev/stdout, /dev/fd/1, /proc/self/fd/1): `stdout`, the
 *   writer of results, whatever stdout is (a socket too, which cannot be opened by name);
 * - a FIFO, a character device (a terminal, /dev/null) or another open descriptor's name
 *   (/dev/stderr, /dev/fd/N): written into, as `> FILE` does, but appended, never truncated (a
 *   FIFO waits for its reader);
 * - a folder, a socket or a block device: refused before anything is written.
 */
export async function writeOutputFile(path: string, text: string, stdout: (text: string) => Promise<void>, flag = '--output', shown = path): Promise<void> {
  const target = outputTarget(path, flag, shown);
  if (target === 'stdout') return stdout(text);
  try {
    if (target.into) await writeFile(target.file, text, { flag: constants.O_WRONLY | constants.O_APPEND });
    else await replaceFile(target.file, text);
  } catch (error) {
    throw new OutputError(`${flag}: cannot write ${shown}: ${writeFailure(error)}`);
  }
}

/** Replaces file (or makes it) with text: a temporary file beside it, then a rename over it. */
async function replaceFile(file: string, text: string): Promise<void> {
  const temporary = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(temporary, text, { flag: 'wx' });
    keepAccess(file, temporary);
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
}

/** The file a page replaces (into: false) or is written into (into: true), or stdout, for writeOutputFile; shown: path as given. */
function outputTarget(path: string, flag: string, shown: string): { file: string; into: boolean } | 'stdout' {
  const descriptor = descriptorOf(path);
  if (descriptor === 1) return 'stdout';
  if (descriptor !== undefined) return { file: path, into: true };
  const file = writtenFile(path, flag, shown);
  let stats: Stats;
  try {
    stats = statSync(file);
  } catch {
    // none (made), or one that cannot be looked at: the write says why it fails
    return { file, into: false };
  }
  if (stats.isFile()) return { file, into: false };
  if (stats.isFIFO() || stats.isCharacterDevice()) return { file, into: true };
  const what = stats.isDirectory() ? 'a folder' : stats.isSocket() ? 'a socket' : 'a block device';
  throw new UsageError(`${flag}: cannot write ${shown}: it is ${what}`, [], 'name a file (replaced whole, or made), a FIFO or a terminal');
}

/**
 * The name of an open descriptor: /dev/stdout, /dev/stderr, /dev/fd/N, /proc/PID/fd/N (Linux's links
 * to what it is open on); the groups: stdout, stderr, N of /dev/fd, the process, N of /proc.
 */
const DESCRIPTOR = /^\/(?:dev\/(?:(stdout)|(stderr)|fd\/(\d+))|proc\/(self|thread-self|\d+)(?:\/task\/\d+)?\/fd\/(\d+))$/;

/**
 * The descriptor path names, or a symbolic link to it names: what it is open on (a pipe, a socket,
 * a file the shell opened to append to) is written into, not renamed over. -1: another process's.
 * The links are followed one by one: a descriptor's link may name no path (pipe:[1234]).
 */
function descriptorOf(path: string): number | undefined {
  let name = resolve(path);
  // 40: Linux's limit of links followed in one path
  for (let hop = 0; hop <= 40; hop++) {
    const match = DESCRIPTOR.exec(name);
    if (match) {
      const [, stdout, stderr, fd, owner, procFd] = match;
      if (stdout || stderr || fd) return stdout ? 1 : stderr ? 2 : Number(fd);
      return owner === 'self' || owner === 'thread-self' || Number(owner) === process.pid ? Number(procFd) : -1;
    }
    try {
      name = resolve(dirname(name), readlinkSync(name));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Prints a page: to stdout, or to --output's file (then a note naming it), opened with --open where that makes sense. */
export async function printPage(ctx: Context, html: string, flags: PageFlags): Promise<void> {
  if (flags.output === undefined) {
    await ctx.output.formatted(html, 'html');
    return;
  }
  const path = ctx.resolvePath(flags.output);
  await writeOutputFile(path, html, (text) => ctx.output.formatted(text, 'html'), '--output', flags.output);
  ctx.log.info(`wrote ${flags.output}`);
  if (!flags.open) return;
  const why = !ctx.io.stdoutIsTTY ? 'stdout is not a terminal' : isCI(ctx.io.env) ? 'CI is set' : undefined;
  if (why) {
    ctx.log.info(`not opening ${flags.output} in a browser: ${why}`);
    return;
  }
  await openInBrowser(ctx, path);
}

/**
 * trend's hook: a series as a page (output/html.ts trendHtml) to stdout or --output. The trend
 * command calls it when ctx.format is 'html' (with 'trend' in PAGE_COMMANDS and PAGE_OPTIONS in its flags).
 */
export async function printTrendPage(
  ctx: Context,
  response: TimeframesResponse,
  flags: PageFlags,
  made: { dataVersion?: string | undefined; filters?: readonly string[]; compared?: { dateFrom: string; dateTo: string } | undefined } = {},
): Promise<void> {
  const { trendHtml } = await import('../output/html.js');
  const html = trendHtml(response, {
    referenceCurrency: response.buckets[0]?.referenceCurrency ?? ctx.globals.referenceCurrency,
    version: packageVersion(),
    ...made,
  });
  await printPage(ctx, html, flags);
}

/** The program that opens a file in the default application, per platform, and its arguments. */
export function opener(platform: NodeJS.Platform, path: string): { command: string; args: string[] } {
  if (platform === 'darwin') return { command: 'open', args: [path] };
  // start is a command of cmd; the empty title (node quotes an empty argument as "") keeps a quoted path from being taken for one
  if (platform === 'win32') return { command: 'cmd', args: ['/c', 'start', '', path] };
  return { command: 'xdg-open', args: [path] };
}

/** How long an opener that fails at once (xdg-open finds no browser: exit 3) is waited for; one still running then has started a browser. */
const OPENER_WAIT_MS = 2000;

/**
 * Starts the opener, detached (convx does not wait for the browser); one that cannot start, or that
 * fails within OPENER_WAIT_MS (xdg-open without a browser to hand the file to), is a warning, not a
 * failure: the file is written.
 */
async function openInBrowser(ctx: Context, path: string): Promise<void> {
  const { command, args } = opener(process.platform, path);
  const failure = await new Promise<string | undefined>((resolve) => {
    const child = spawn(command, args, { detached: true, stdio: 'ignore', env: ctx.io.env, cwd: ctx.io.cwd });
    child.once('error', (error: NodeJS.ErrnoException) =>
      resolve(error.code === 'ENOENT' ? `${command} was not found${command === 'xdg-open' ? ' (install xdg-utils)' : ''}` : (error.code ?? error.message)),
    );
    child.once('spawn', () => {
      const timer = setTimeout(() => {
        child.unref();
        resolve(undefined);
      }, OPENER_WAIT_MS);
      timer.unref();
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        resolve(code === 0 ? undefined : `${command} ${signal ? `was stopped by ${signal}` : `exited with ${code}`}`);
      });
    });
  });
  if (failure) ctx.log.warn(`could not open ${path} in a browser: ${failure}; open the file yourself`);
}
