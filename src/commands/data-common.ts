/**
 * What the data commands share: an import's options, progress line and summary parts
 * (data import, --split-plugins, --append), and a whole-number flag in a range.
 */
import { threadsOption } from '../config.js';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { withCommas } from '../words.js';

/** What every import passes on: the reference currency asked (if any) and DuckDB's threads. */
export function importOptions(ctx: Context): { referenceCurrency?: string; threads?: number } {
  return { ...(ctx.globals.referenceCurrency !== undefined ? { referenceCurrency: ctx.globals.referenceCurrency } : {}), ...threadsOption(ctx) };
}

/** Runs an import with its phases on the progress line (a terminal's stderr, after a second; not with --quiet or CI). */
export async function withPhases<T>(ctx: Context, work: (onPhase: (phase: string) => void) => Promise<T>): Promise<T> {
  const { startProgress } = await import('./shared.js');
  const progress = startProgress(ctx);
  try {
    return await work((phase) => progress.phase(phase));
  } finally {
    progress.done();
  }
}

/** An import's findings, a warning each. */
export function warnFindings(ctx: Context, findings: readonly { message: string; examples: readonly string[] }[]): void {
  for (const warning of findings) ctx.log.warn(`${warning.message}: ${warning.examples.join('; ')}`);
}

/** A summary's parts: the tables' rows (`orders 2,000, touches 20,000`), a size in MB, the seconds since a start. */
export const tableRows = (tables: readonly { table: string; rows: number }[]): string => tables.map((t) => `${t.table} ${withCommas(t.rows)}`).join(', ');
export const megabytes = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MB`;
export const secondsSince = (started: number): string => `${((Date.now() - started) / 1000).toFixed(1)} s`;

/** A flag's whole number from min to max, else a usage error naming the flag. */
export function wholeNumber(flag: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UsageError(`--${flag}: "${value}" must be a whole number from ${min} to ${max}`);
  }
  return Number(value);
}
