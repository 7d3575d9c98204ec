/**
 * The output of `convx validate` over its requests (issue 20: several files or a
 * glob in one run). One request prints exactly what it printed before; several
 * print one result per file in each format: a table each under its file's name
 * and a line of the totals, a JSON array of `{ file, result }`, the annotations
 * of each file (its notice names it), one JUnit test suite per file, one SARIF run
 * with the results of every file (-o html previews one request only).
 */
import type { ChalkInstance } from 'chalk';
import type { ValidateResponse } from '../model/validation.js';
import { plural } from '../words.js';
import { jsonDocument } from './format.js';
import type { ValidateFormat } from './formats.js';
import { safeValue } from './terminal.js';
import { failureReason, githubAnnotations, junitReports, validationSummary } from './validation.js';
import { sarifLog } from './sarif.js';

/** One request's result: its label (the file as named, or stdin), its file for annotations, and its response. */
export interface RequestResult {
  label: string;
  file?: string;
  response: ValidateResponse;
}

/** The results in a format; `maxWarnings` as --max-warnings gives it, `version` convx's (SARIF names it). */
export function validationResults(
  results: readonly RequestResult[],
  format: Exclude<ValidateFormat, 'html'>,
  chalk: ChalkInstance,
  maxWarnings: number | undefined,
  version: string,
  ignored: ReadonlySet<string> = new Set(),
  width?: number,
): string {
  const several = results.length > 1;
  switch (format) {
    case 'sarif':
      return sarifLogs(results, version);
    case 'json':
      return several ? jsonDocument(results.map((r) => ({ file: r.label, result: r.response }))) : jsonDocument(results[0]!.response);
    case 'github':
      return results.map((r) => githubAnnotations(r.response, r.file, maxWarnings, several ? r.label : undefined)).join('');
    case 'junit':
      return junitReports(results.map((r) => ({ response: r.response, name: r.label })), maxWarnings, ignored);
    case 'table': {
      if (!several) return validationSummary(results[0]!.response, chalk, maxWarnings, width);
      const failing = results.filter((r) => failureReason(r.response, maxWarnings) !== undefined).length;
      const tables = results.map((r) => `${chalk.bold(`== ${safeValue(r.label)}`)}\n${validationSummary(r.response, chalk, maxWarnings, width)}`);
      const total = `${plural(results.length, 'request')}: ${results.length - failing} ready, ${failing} not ready`;
      return `${tables.join('\n')}\n${failing ? chalk.red(total) : chalk.green(total)}\n`;
    }
  }
}

/**
 * One SARIF log of several requests: one run (code scanning takes one run per tool and category),
 * its results those of each request in order, each located in its own file.
 */
function sarifLogs(results: readonly RequestResult[], version: string): string {
  const logs = results.map((r) => JSON.parse(sarifLog(r.response, r.file, version)) as { runs: { results: unknown[] }[] });
  const [first] = logs;
  first!.runs[0]!.results = logs.flatMap((log) => log.runs[0]!.results);
  return jsonDocument(first);
}
