import { readFileSync } from 'node:fs';
import { readAll } from '../context.js';
import { ExitCode, UsageError } from '../errors.js';
import type { ValidateResponse } from '../model/validation.js';
import { isValidateFormat, jsonDocument } from '../output/format.js';
import { givenRenderLimitFlag, renderLimitsFromFlags, type RenderLimitFlags } from '../validation/limits.js';
import { trackingOptionsOf } from '../validation/tracking.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';

/** Its flags (OPTIONS of options.ts), and the render limits, whose flags validation/limits.ts defines. */
type ValidateFlags = CommandFlags<'validate'> & RenderLimitFlags;

function readRequest(text: string, source: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${source} is not JSON: ${(error as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new UsageError(`${source} must hold a JSON object (the request body)`);
  return body as Record<string, unknown>;
}

/** The request file's text; a missing file is "not found: PATH" (exit 2), as every other reason it cannot be read is a usage error. */
function readRequestFile(path: string, typed: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UsageError(`not found: ${typed}`, [], 'name the request file (a JSON body of POST /delivery/e-mail/validate), or - for stdin');
    if (code === 'EISDIR') throw new UsageError(`${typed} is a directory, not a request file`);
    if (code === 'EACCES' || code === 'EPERM') throw new UsageError(`cannot read ${typed}: permission denied`);
    throw new UsageError(`cannot read ${typed}: ${code ?? (error as Error).message}`);
  }
}

/** 0 ready; 1 errors, or warnings beyond --max-warnings; 2 a request that could not be read. */
export function exitCode(response: ValidateResponse, maxWarnings: number | undefined): number {
  if (response.render.errors.some((f) => f.code === 'invalid_request')) return ExitCode.usage;
  if (response.render.errors.length) return ExitCode.findings;
  return maxWarnings !== undefined && response.render.warnings.length > maxWarnings ? ExitCode.findings : ExitCode.ok;
}

export default defineHandler<ValidateFlags>({
  async run(ctx, args, flags) {
    const source = args[0]!;
    const format = ctx.format;
    // The context parsed -o against this command's formats (index.ts: formats: VALIDATE_FORMATS).
    if (!isValidateFormat(format)) throw new UsageError(`-o ${format} is not a format of convx validate`);
    let text: string;
    if (source === '-') text = await readAll(ctx.io.stdin);
    else {
      text = readRequestFile(ctx.resolvePath(source), source);
    }
    const body = readRequest(text, source === '-' ? 'stdin' : source);
    const options = { ...((body.options as Record<string, unknown> | undefined) ?? {}) };
    if (flags.sampleSize !== undefined) {
      if (!/^\d+$/.test(flags.sampleSize)) throw new UsageError(`--sample-size: "${flags.sampleSize}" is not a whole number`);
      options.sampleSize = Number(flags.sampleSize);
    }
    if (flags.resolveOnly) options.resolveOnly = true;
    trackingOptionsOf(flags, ctx.settings.trackingParams, options);
    if (Object.keys(options).length) body.options = options;
    let maxWarnings: number | undefined;
    if (flags.maxWarnings !== undefined) {
      if (!/^\d+$/.test(flags.maxWarnings)) throw new UsageError(`--max-warnings: "${flags.maxWarnings}" is not a whole number`);
      maxWarnings = Number(flags.maxWarnings);
    }

    const limitFlag = givenRenderLimitFlag(flags);
    if (limitFlag && ctx.settings.mode === 'api') {
      throw new UsageError(`${limitFlag} works in local mode only: a server applies its own limits (the same flags of convx serve)`);
    }
    const renderLimits = renderLimitsFromFlags(flags);

    const backend = await ctx.openBackend({ validation: true });
    let response: ValidateResponse;
    try {
      response = await backend.validateEmail(body, renderLimits);
    } finally {
      await backend.close();
    }
    const { failureReason, githubAnnotations, junitReport, validationSummary } = await import('../output/validation.js');
    const label = source === '-' ? 'stdin' : source;
    const output = {
      table: () => validationSummary(response, ctx.chalk, maxWarnings),
      json: () => jsonDocument(response),
      github: () => githubAnnotations(response, source === '-' ? undefined : source, maxWarnings),
      junit: () => junitReport(response, label, maxWarnings),
    }[format]();
    // A summary is made of safe values (terminal.ts); the machine formats are exact data, defused only on a terminal.
    if (format === 'table') await ctx.output.text(output);
    else await ctx.output.formatted(output, format);
    // Why the run fails, on stderr, whatever the format (a CI log shows it beside the exit code);
    // a table on a terminal ends with the same verdict already.
    const reason = failureReason(response, maxWarnings);
    if (reason && !(format === 'table' && ctx.io.stdoutIsTTY)) ctx.log.failure('convx: not ready:', reason);
    return exitCode(response, maxWarnings);
  },
});
