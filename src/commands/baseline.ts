/**
 * convx validate's baseline flags (BASELINE_OPTIONS of options.ts): the file read and checked before
 * any work (a bad one is exit 2), the comparison (model/baseline.ts) once the result is in, the
 * formats' text with it (output/baseline.ts), and --update-baseline's write (as --output's: page.ts writeOutputFile).
 * Local and API mode alike: the baseline is a local file, the result comes from either.
 */
import { readFileSync } from 'node:fs';
import { jsonErrorAt } from '../config-file.js';
import type { Context } from '../context.js';
import { ExitCode, readFailure, UsageError } from '../errors.js';
import { baselineOf, baselineReason, compareWithBaseline, parseBaseline, parseDrift, type BaselineComparison, type BaselinePolicy } from '../model/baseline.js';
import type { ValidateResponse } from '../model/validation.js';
import { jsonDocument } from '../output/format.js';
import { applyPolicy, type FindingPolicy } from '../validation/policy.js';
import { writeOutputFile } from './page.js';

export interface BaselineFlags {
  baseline?: string | undefined;
  maxAudienceDrift?: string | undefined;
  strictBaseline?: boolean | undefined;
  updateBaseline?: boolean | undefined;
}

/** A run with --baseline: the file as named and as resolved, the earlier result (none yet under --update-baseline), the policy. */
export interface BaselineRun {
  file: string;
  path: string;
  before: ValidateResponse | undefined;
  policy: BaselinePolicy;
  update: boolean;
  /** Under --update-baseline, why the file there could not be read as a baseline (not JSON, an old or broken shape): it is replaced. */
  unreadable?: string | undefined;
}

/** The baseline file's text; undefined when it does not exist and --update-baseline will write it. */
function readBaselineFile(path: string, file: string, update: boolean): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && update) return undefined;
    if (code === 'ENOENT') throw new UsageError(`--baseline: not found: ${file}`, [], 'write one with --update-baseline (or save the output of -o json)');
    if (code === 'EISDIR') throw new UsageError(`--baseline: ${file} is a directory, not a file`);
    throw new UsageError(`--baseline: cannot read ${file}: ${readFailure(error)}`);
  }
}

/**
 * The baseline of the flags, read and checked; undefined without --baseline. Usage errors (exit 2)
 * before any work; under --update-baseline a file that is not a baseline is replaced instead.
 */
export function baselineRun(ctx: Context, flags: BaselineFlags): BaselineRun | undefined {
  if (flags.baseline === undefined) {
    const given = [flags.maxAudienceDrift !== undefined && '--max-audience-drift', flags.strictBaseline && '--strict-baseline', flags.updateBaseline && '--update-baseline'];
    const stray = given.find((f): f is string => typeof f === 'string');
    if (stray) throw new UsageError(`${stray} applies to --baseline FILE only`, [], 'add --baseline FILE (the JSON of an earlier -o json run)');
    return undefined;
  }
  let maxAudienceDrift: number | undefined;
  if (flags.maxAudienceDrift !== undefined) {
    maxAudienceDrift = parseDrift(flags.maxAudienceDrift);
    if (maxAudienceDrift === undefined) throw new UsageError(`--max-audience-drift: "${flags.maxAudienceDrift}" is not a percentage (e.g. 10%)`);
  }
  const update = !!flags.updateBaseline;
  const path = ctx.resolvePath(flags.baseline);
  const text = readBaselineFile(path, flags.baseline, update);
  const run: BaselineRun = { file: flags.baseline, path, before: undefined, policy: { maxAudienceDrift, strict: !!flags.strictBaseline }, update };
  try {
    run.before = text === undefined ? undefined : parseBaseline(text, flags.baseline, jsonErrorAt);
  } catch (error) {
    // the flag that rewrites the file may replace one it cannot read; without it, exit 2
    if (!update || !(error instanceof UsageError)) throw error;
    run.unreadable = error.message;
  }
  return run;
}

const invalid = (response: ValidateResponse) => response.render.errors.some((f) => f.code === 'invalid_request');

/**
 * The comparison of a result with the run's baseline; none without one, without an earlier result,
 * or for a request that could not be read. The baseline is read under the run's --ignore and
 * --fail-on, as the result was (an ignored code's findings are in neither, not gone; a code made
 * fatal is an error in both, not new). Under --update-baseline no change fails the run.
 */
export function compareRun(run: BaselineRun | undefined, response: ValidateResponse, findings: FindingPolicy): BaselineComparison | undefined {
  if (!run?.before || invalid(response)) return undefined;
  const comparison = compareWithBaseline(applyPolicy(run.before, findings), response, run.file, run.policy);
  return run.update ? { ...comparison, changes: comparison.changes.map((c) => ({ ...c, fails: false })) } : comparison;
}

/** The exit code with the baseline's: 1 when a change fails a run that would pass. */
export function exitWithBaseline(code: number, comparison: BaselineComparison | undefined): number {
  return code === ExitCode.ok && baselineReason(comparison) ? ExitCode.findings : code;
}

/** --update-baseline: the result written to the baseline file, replaced whole (not for a request that could not be read). */
export async function updateBaseline(ctx: Context, run: BaselineRun | undefined, response: ValidateResponse): Promise<void> {
  if (!run?.update) return;
  if (invalid(response)) {
    ctx.log.warn(`--update-baseline: ${run.file} left as it was: the request could not be read`);
    return;
  }
  if (run.unreadable) ctx.log.warn(`${run.unreadable}; --update-baseline replaces it`);
  await writeOutputFile(run.path, jsonDocument(baselineOf(response)), (text) => ctx.output.formatted(text, 'json'), '--update-baseline', run.file);
  ctx.log.info(`wrote the baseline ${run.file}`);
}
