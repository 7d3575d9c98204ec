/**
 * Where a page (-o html, output/html.ts) goes: stdout, or with --output a file replaced whole (never
 * half-written); --open shows that file in the default browser, on a desktop only. Shared by the
 * commands that print pages (commands/globals.ts PAGE_COMMANDS).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm, writeFile, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
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
 * Writes text to a file as one step: a temporary file beside it, then a rename over it, so that a
 * reader never sees half a page and a failure leaves the old file (or none), not a broken one.
 */
export async function writeFileAtomic(path: string, text: string, flag = '--output'): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(temporary, text, { flag: 'wx' });
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => undefined);
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(`${flag}: cannot write ${path}: ${WRITE_FAILURES[code ?? ''] ?? code ?? String(error)}`);
  }
}

/** Why a file could not be written, in words, by the system's error code. */
const WRITE_FAILURES: Record<string, string> = {
  ENOENT: 'its folder does not exist',
  ENOTDIR: 'a part of its path is not a folder',
  EISDIR: 'it is a folder',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
};

/** Prints a page: to stdout, or to --output's file (then a note naming it), opened with --open where that makes sense. */
export async function printPage(ctx: Context, html: string, flags: PageFlags): Promise<void> {
  if (flags.output === undefined) {
    await ctx.output.formatted(html, 'html');
    return;
  }
  const path = ctx.resolvePath(flags.output);
  await writeFileAtomic(path, html);
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

/** Starts the opener, detached (convx does not wait for the browser); one that cannot start is a warning, not a failure: the file is written. */
async function openInBrowser(ctx: Context, path: string): Promise<void> {
  const { command, args } = opener(process.platform, path);
  const started = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    const child = spawn(command, args, { detached: true, stdio: 'ignore', env: ctx.io.env, cwd: ctx.io.cwd });
    child.once('error', (error) => resolve(error));
    child.once('spawn', () => {
      child.unref();
      resolve(undefined);
    });
  });
  if (!started) return;
  const hint = started.code === 'ENOENT' ? `${command} was not found${command === 'xdg-open' ? ' (install xdg-utils)' : ''}` : (started.code ?? started.message);
  ctx.log.warn(`could not open ${path} in a browser: ${hint}; open the file yourself`);
}
