import type { ResolvedSettings } from '../config.js';
import { readAll, type Context } from '../context.js';
import { ConvxError, ExitCode, PipeClosedError, UsageError } from '../errors.js';
import { baselineReason, type BaselineComparison } from '../model/baseline.js';
import { invalidResponse, MAX_SAMPLE_SIZE, MAX_TRACKING_ENTRIES, TRACKING_LISTS, type Finding, type ValidateResponse } from '../model/validation.js';
import { jsonDocument } from '../output/format.js';
import { isValidateFormat, type ValidateFormat } from '../output/formats.js';
import { terminalColumns } from '../output/sink.js';
import type { RequestResult } from '../output/validation-results.js';
import { givenRenderLimitFlag, renderLimitsFromFlags, type RenderLimitFlags } from '../validation/limits.js';
import { locateFindings } from '../validation/locations.js';
import { applyPolicy, findingPolicy, type FindingPolicy } from '../validation/policy.js';
import { packageVersion } from '../version.js';
import { baselineRun, compareRun, exitWithBaseline, updateBaseline } from './baseline.js';
import type { CommandFlags } from './options.js';
import { defineHandler } from './registry.js';
import { parseRequest, readRequestFile, requestSources, type ReadRequest, type RequestSource } from './request-files.js';

/** Its flags (OPTIONS of options.ts), and the render limits, whose flags validation/limits.ts defines. */
type ValidateFlags = CommandFlags<'validate'> & RenderLimitFlags;

/** 0 ready; 1 errors, or warnings beyond --max-warnings; 2 a request that could not be read. */
export function exitCode(response: ValidateResponse, maxWarnings: number | undefined): number {
  if (response.render.errors.some((f) => f.code === 'invalid_request')) return ExitCode.usage;
  if (response.render.errors.length) return ExitCode.findings;
  return maxWarnings !== undefined && response.render.warnings.length > maxWarnings ? ExitCode.findings : ExitCode.ok;
}

/** A whole number flag, or a usage error naming the flag (never the request file: issue 20). */
function wholeNumber(flag: string, value: string | undefined, max?: number): number | undefined {
  if (value === undefined) return undefined;
  // A negative count where any count from 0 on is taken (--max-warnings -1): the bound it is below.
  if (max === undefined && /^-\d+$/.test(value)) throw new UsageError(`${flag}: "${value}" must be 0 or more`);
  if (!/^\d+$/.test(value)) throw new UsageError(`${flag}: "${value}" is not a whole number`);
  const n = Number(value);
  if (max !== undefined && (n < 1 || n > max)) throw new UsageError(`${flag}: ${value} is out of range: a whole number from 1 to ${max}`);
  return n;
}

/**
 * A tracking list of a flag or of the profile (`source` names it), comma-separated: a usage
 * error naming the source when it lists nothing, too much, or an entry that is not one (the
 * request's own option is an invalid_request of the request file instead).
 */
function trackingList(key: keyof typeof TRACKING_LISTS, text: string, source: string): string[] {
  const list = text.split(',').map((v) => v.trim()).filter((v) => v !== '');
  const { pattern, what } = TRACKING_LISTS[key];
  const wrong = list.find((v) => !pattern.test(key === 'trackingDomains' ? v.toLowerCase().replace(/\.$/, '') : v));
  if (wrong !== undefined) throw new UsageError(`${source}: ${JSON.stringify(wrong)} is not ${what}`);
  if (!list.length || list.length > MAX_TRACKING_ENTRIES) throw new UsageError(`${source}: give 1 to ${MAX_TRACKING_ENTRIES} of them, comma-separated`);
  return list;
}

/** --clients checked before any request (a glob that matches no client is the flag's usage error, not the request file's). */
async function checkClientsFlag(text: string | undefined): Promise<void> {
  if (text === undefined) return;
  const { selectClients } = await import('../validation/clients.js');
  const { unknown } = selectClients(text.split(',').map((glob) => glob.trim()));
  if (unknown) throw new UsageError(`--clients: ${unknown}`);
}

/** The request options the flags override (options of the request as given otherwise). */
function withFlagOptions(body: Record<string, unknown>, flags: ValidateFlags, format: ValidateFormat, settings: ResolvedSettings): Record<string, unknown> {
  const options = { ...((body.options as Record<string, unknown> | undefined) ?? {}) };
  const sampleSize = wholeNumber('--sample-size', flags.sampleSize, MAX_SAMPLE_SIZE);
  if (sampleSize !== undefined) options.sampleSize = sampleSize;
  if (flags.resolveOnly) options.resolveOnly = true;
  if (flags.clients !== undefined) options.clients = flags.clients.split(',').map((glob) => glob.trim());
  // tracking lint: the flag, else the request's option, else the profile's setting
  const profile = (key: string) => `${key} of profile "${settings.profile}"`;
  if (flags.trackingDomains !== undefined) options.trackingDomains = trackingList('trackingDomains', flags.trackingDomains, '--tracking-domains');
  else if (options.trackingDomains === undefined && settings.trackingDomains !== undefined) {
    options.trackingDomains = trackingList('trackingDomains', settings.trackingDomains, profile('trackingDomains'));
  }
  if (flags.trackingParams !== undefined) options.trackingParams = trackingList('trackingParams', flags.trackingParams, '--tracking-params');
  else if (options.trackingParams === undefined && options.trackingDomains !== undefined && settings.trackingParams !== undefined) {
    options.trackingParams = trackingList('trackingParams', settings.trackingParams, profile('trackingParams'));
  }
  if (format === 'html') options.preview = true; // the page shows each sample's whole HTML
  return Object.keys(options).length ? { ...body, options } : body;
}

/** A request source read and parsed; one that cannot be read is its problem, to report as a result. */
async function readSource(ctx: Context, source: RequestSource): Promise<ReadRequest> {
  try {
    const text = source.file === undefined ? await readAll(ctx.io.stdin) : readRequestFile(ctx.resolvePath(source.file), source.file);
    return parseRequest(text, source.label);
  } catch (error) {
    if (error instanceof UsageError) return { problem: error };
    throw error;
  }
}

/** The result of a request that cannot be read: one invalid_request error, at its line when the JSON breaks there. */
function unreadable(read: Extract<ReadRequest, { problem: unknown }>, source: RequestSource): ValidateResponse {
  const at = read.line !== undefined && source.file !== undefined ? { line: read.line, file: source.file } : {};
  const finding: Finding = { code: 'invalid_request', message: read.problem.message, ...at };
  return invalidResponse([finding]);
}

/** Each request validated on one backend, in order; the problems of those that cannot be read. */
async function validateAll(ctx: Context, sources: RequestSource[], flags: ValidateFlags, policy: FindingPolicy, format: ValidateFormat) {
  const results: RequestResult[] = [];
  /** The requests that cannot be read, by their result. */
  const problems = new Map<RequestResult, UsageError>();
  const renderLimits = renderLimitsFromFlags(flags);
  await checkClientsFlag(flags.clients);
  const backend = await ctx.openBackend({ validation: true });
  try {
    for (const source of sources) {
      const read = await readSource(ctx, source);
      let response: ValidateResponse;
      if ('problem' in read) response = unreadable(read, source);
      else {
        response = applyPolicy(await backend.validateEmail(withFlagOptions(read.body, flags, format, ctx.settings), renderLimits), policy);
        if (source.file !== undefined) response = locateFindings(response, read.body, read.lines, source.file);
      }
      const result = { label: source.label, ...(source.file === undefined ? {} : { file: source.file }), response };
      results.push(result);
      if ('problem' in read) problems.set(result, read.problem);
    }
  } finally {
    await backend.close();
  }
  return { results, problems };
}

/** What takes one request only: a baseline (one earlier result) and the preview page. */
function oneRequestOnly(format: ValidateFormat, flags: ValidateFlags): void {
  if (flags.baseline !== undefined || flags.updateBaseline) {
    // `--update-baseline FILE` reads FILE as a second request: the flag is a switch, and --baseline names the file
    const hint = flags.updateBaseline && flags.baseline === undefined ? '--update-baseline takes no file: it writes the one --baseline names (--baseline FILE --update-baseline)' : undefined;
    throw new UsageError('--baseline compares one request with its earlier result: name one request file', [], hint);
  }
  if (format === 'html') throw new UsageError('-o html previews one request: name one request file (a page per file: run once for each)');
}

/** The columns a summary is laid out to: the terminal's, when stdout is one (a pipe: none, lines whole). */
const summaryWidth = (ctx: Context) => (ctx.io.stdoutIsTTY ? terminalColumns(ctx.io.stdout, ctx.io.env) : undefined);

/** One request's result in the format, with its baseline comparison (none without --baseline). */
async function printOne(ctx: Context, result: RequestResult, format: ValidateFormat, maxWarnings: number | undefined, comparison: BaselineComparison | undefined, ignored: ReadonlySet<string>): Promise<void> {
  const { response, label, file } = result;
  const { failureReason, githubAnnotations, junitReport, validationSummary } = await import('../output/validation.js');
  const [{ withBaseline }, { validationHtml }, { sarifLog }] = await Promise.all([import('../output/baseline.js'), import('../output/validation-html.js'), import('../output/sarif.js')]);
  const formatted = {
    table: () => validationSummary(response, ctx.chalk, maxWarnings, summaryWidth(ctx)),
    json: () => jsonDocument(response),
    github: () => githubAnnotations(response, file, maxWarnings),
    junit: () => junitReport(response, label, maxWarnings, ignored),
    html: () => validationHtml(response, { request: label, version: packageVersion(), failure: failureReason(response, maxWarnings) }, comparison),
    sarif: () => sarifLog(response, file, packageVersion(), comparison),
  }[format]();
  await print(ctx, withBaseline(format, formatted, response, comparison, ctx.chalk), format);
}

/** Several requests' results, one per request, in the format (never html: oneRequestOnly). */
async function printSeveral(ctx: Context, results: RequestResult[], format: ValidateFormat, maxWarnings: number | undefined, ignored: ReadonlySet<string>): Promise<void> {
  const { validationResults } = await import('../output/validation-results.js');
  await print(ctx, validationResults(results, format === 'html' ? 'json' : format, ctx.chalk, maxWarnings, packageVersion(), ignored, summaryWidth(ctx)), format);
}

/**
 * The results printed. A closed pipe (stdout's reader gone: `convx validate … | head`) is not an
 * error, but it does not end the run either: the verdict still goes to stderr, --update-baseline
 * still writes its file, and the exit code is still the verdict's (a CI step piping into head fails).
 */
async function printResults(print: () => Promise<void>): Promise<void> {
  try {
    await print();
  } catch (error) {
    if (!(error instanceof PipeClosedError)) throw error;
  }
}

/**
 * work, whose failure (a ConvxError: a baseline or dataset missing, the API refusing) is printed in
 * the CI formats too, before it ends the run as ever (exit 2 and more, the message on stderr): an
 * ::error annotation, a JUnit document of one errored case, a SARIF log whose invocation failed. A
 * CI job that uploads the file then shows why, rather than failing on an empty one.
 */
async function inCiFormat<T>(ctx: Context, format: ValidateFormat, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ConvxError && (format === 'github' || format === 'junit' || format === 'sarif')) {
      const [{ setupFailure }, { sarifFailure }] = await Promise.all([import('../output/validation.js'), import('../output/sarif.js')]);
      // as stderr says it: the message, and its hint on a line of its own
      const message = error.hint ? `${error.message}\nhint: ${error.hint}` : error.message;
      const text = format === 'sarif' ? sarifFailure(message, packageVersion()) : setupFailure(format, message);
      await printResults(() => print(ctx, text, format));
    }
    throw error;
  }
}

/** A summary is made of safe values (terminal.ts); the machine formats are exact data, defused only on a terminal. */
async function print(ctx: Context, output: string, format: ValidateFormat): Promise<void> {
  if (format === 'table') await ctx.output.text(output);
  else await ctx.output.formatted(output, format);
}

export default defineHandler<ValidateFlags>({
  async run(ctx, args, flags) {
    const format = ctx.format;
    // The context parsed -o against this command's formats (index.ts: formats: VALIDATE_FORMATS).
    if (!isValidateFormat(format)) throw new UsageError(`-o ${format} is not a format of convx validate`);
    const sources = requestSources(args, ctx.io.cwd);
    const policy = findingPolicy(flags.ignore, flags.failOn);
    wholeNumber('--sample-size', flags.sampleSize, MAX_SAMPLE_SIZE);
    const maxWarnings = wholeNumber('--max-warnings', flags.maxWarnings);
    if (sources.length > 1) oneRequestOnly(format, flags);
    const limitFlag = givenRenderLimitFlag(flags);
    if (limitFlag && ctx.settings.mode === 'api') {
      throw new UsageError(`${limitFlag} works in local mode only: a server applies its own limits (the same flags of convx serve)`);
    }
    // a run that cannot validate at all (its baseline or dataset missing, the API refusing) says so in a CI format too
    const { baseline, results, problems } = await inCiFormat(ctx, format, async () => {
      const run = baselineRun(ctx, flags);
      return { baseline: run, ...(await validateAll(ctx, sources, flags, policy, format)) };
    });
    // One request that cannot be read prints nothing but the error in a table or JSON, as it always did;
    // the CI formats and the preview still get its annotation, failing test case or result.
    const only = results.length === 1 ? problems.get(results[0]!) : undefined;
    if (only && (format === 'table' || format === 'json')) throw only;
    const comparison = results.length === 1 ? compareRun(baseline, results[0]!.response, policy) : undefined;
    await printResults(() => (results.length === 1 ? printOne(ctx, results[0]!, format, maxWarnings, comparison, policy.ignore) : printSeveral(ctx, results, format, maxWarnings, policy.ignore)));
    if (only) throw only;
    // Why a run fails, on stderr, whatever the format (a CI log shows it beside the exit code);
    // a table on a terminal ends with the same verdict already. A request that cannot be read says why.
    const { failureReason } = await import('../output/validation.js');
    for (const result of results) {
      const problem = problems.get(result);
      const reason = problem ? undefined : [failureReason(result.response, maxWarnings), baselineReason(comparison)].filter(Boolean).join(' and ');
      if (problem) ctx.log.failure('convx: error:', problem.message);
      else if (reason && !(format === 'table' && ctx.io.stdoutIsTTY)) ctx.log.failure('convx: not ready:', results.length > 1 ? `${result.label}: ${reason}` : reason);
    }
    if (results.length === 1) await updateBaseline(ctx, baseline, results[0]!.response);
    return exitWithBaseline(Math.max(...results.map(({ response }) => exitCode(response, maxWarnings))), comparison);
  },
});
