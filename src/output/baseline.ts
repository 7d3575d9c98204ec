/**
 * A validation's comparison with its baseline (model/baseline.ts) in the formats that print it as
 * text: a section of the summary, GitHub annotations, a JUnit test case, the JSON document. Pure.
 * The html and sarif writers take the comparison themselves (validation-html.ts, sarif.ts).
 */
import type { ChalkInstance } from 'chalk';
import { baselineReason, type BaselineComparison } from '../model/baseline.js';
import type { ValidateResponse } from '../model/validation.js';
import { plural } from '../words.js';
import { jsonDocument } from './format.js';
import { safeData } from './terminal.js';
import { escapeData, xml } from './validation.js';

/** The summary's section: "same as baseline", or each change (those that fail the run marked), then why it fails. */
export function baselineSection(given: BaselineComparison, chalk: ChalkInstance): string {
  const comparison = safeData(given);
  const title = chalk.bold(`Baseline ${comparison.file}`);
  if (comparison.same) return `\n${title}: same as baseline\n`;
  const lines = ['', `${title}: ${plural(comparison.changes.length, 'change')}`];
  for (const change of comparison.changes) {
    lines.push(`  ${change.fails ? chalk.red('✗') : chalk.dim('·')} ${change.message}`);
    for (const line of change.diff ?? []) lines.push(chalk.dim(`      ${line}`));
  }
  const reason = baselineReason(comparison);
  if (reason) lines.push(chalk.red(`NOT READY: ${reason}`));
  return `${lines.join('\n')}\n`;
}

/** An annotation per change: ::error for one that fails the run, else ::notice; a ::notice when nothing changed. */
export function baselineAnnotations(comparison: BaselineComparison): string {
  const title = `title=convx baseline`;
  if (comparison.same) return `::notice ${title}::${escapeData(`same as baseline ${comparison.file}`)}\n`;
  return comparison.changes
    .map((c) => `::${c.fails ? 'error' : 'notice'} ${title}::${escapeData([c.message, ...(c.diff ?? [])].join('\n'))}\n`)
    .join('');
}

/** JUnit XML (output/validation.ts junitReport) with one more test case, convx.validate.baseline, failed when a change fails the run. */
export function junitWithBaseline(report: string, comparison: BaselineComparison): string {
  const reason = baselineReason(comparison);
  const listed = comparison.same ? `same as baseline ${comparison.file}` : comparison.changes.map((c) => [c.message, ...(c.diff ?? [])].join('\n')).join('\n');
  const body = reason
    ? `\n      <failure type="baseline" message="${xml(reason)}">${xml(listed)}</failure>\n    `
    : `\n      <system-out>${xml(listed)}</system-out>\n    `;
  const testcase = `    <testcase classname="convx.validate.baseline" name="baseline">${body}</testcase>\n`;
  return report
    .replace(/tests="(\d+)" failures="(\d+)"/g, (_, tests: string, failures: string) => `tests="${Number(tests) + 1}" failures="${Number(failures) + (reason ? 1 : 0)}"`)
    .replace('  </testsuite>\n', () => `${testcase}  </testsuite>\n`);
}

/** The JSON document: the response and, beside it, the comparison. */
export function jsonWithBaseline(response: ValidateResponse, comparison: BaselineComparison): string {
  return jsonDocument({ ...response, baseline: comparison });
}

/**
 * A format's text with the comparison added: table, json, github and junit (html and sarif carry it
 * themselves); the text as it is without a comparison.
 */
export function withBaseline(format: string, text: string, response: ValidateResponse, comparison: BaselineComparison | undefined, chalk: ChalkInstance): string {
  if (!comparison) return text;
  if (format === 'table') return text + baselineSection(comparison, chalk);
  if (format === 'json') return jsonWithBaseline(response, comparison);
  if (format === 'github') return text + baselineAnnotations(comparison);
  if (format === 'junit') return junitWithBaseline(text, comparison);
  return text;
}
