/** Pure formatters of a validation response: a terminal summary, GitHub annotations, JUnit XML. */
import type { ChalkInstance } from 'chalk';
import { CHECKS, type Finding, type ValidateResponse } from '../model/validation.js';
import { plural } from '../words.js';
import { fit, padColumns, safeData, textWidth, wrapRuns, type TextRun } from './terminal.js';

/** A run of a line with its colour, laid out to a terminal's width (wrapRuns). */
type Run = TextRun & { colour?: (text: string) => string };
const laidOut = (runs: Run[], width: number | undefined, indent: number): string[] =>
  wrapRuns(runs, width, indent).map((line) => line.map((run) => ('colour' in run && run.colour ? run.colour(run.text) : run.text)).join(''));
/** The most of a sample's HTML excerpt a summary shows. */
const EXCERPT_COLUMNS = 160;

const where = (f: Finding) =>
  [f.assetRef, f.language ? `language ${f.language}` : undefined, f.field, f.contactId ? `contact ${f.contactId}` : undefined]
    .filter(Boolean)
    .join(', ');

/**
 * A validation for a person. `width`: the terminal's columns, to which a sample's subject and
 * excerpt are cut and a finding's line wrapped (under its message); none (a pipe): lines whole.
 */
export function validationSummary(given: ValidateResponse, chalk: ChalkInstance, maxWarnings?: number, width?: number): string {
  // Subjects, excerpts, ids and messages come from the data and the request: made safe for a terminal first.
  const response = safeData(given);
  const { audience, languages, render } = response;
  const lines: string[] = [];
  const b = audience.suppressionBreakdown;
  lines.push(chalk.bold('Audience'));
  lines.push(`  intended     ${audience.intended}`);
  lines.push(...laidOut([{ text: `  suppressed   ${audience.suppressed}  (unsubscribed ${b.unsubscribed}, invalid e-mail ${b.invalidEmail}, no consent ${b.noConsent})` }], width, 15));
  lines.push(`  deliverable  ${chalk.bold(String(audience.deliverable))}`);
  if (languages.length) {
    lines.push('', chalk.bold('Languages'));
    const width = Math.max(...languages.map((l) => textWidth(l.language)));
    for (const l of languages) lines.push(`  ${padColumns(l.language, width)}  ${String(l.recipients).padStart(7)}  ${l.assetRef}`);
  }
  if (render.samples.length) {
    lines.push('', chalk.bold('Samples'));
    const cut = (text: string, used: number) => (width === undefined ? text : fit(text, Math.max(1, width - used)));
    for (const s of render.samples) {
      const head = `  ${s.language} ${s.contactId}  `;
      lines.push(`  ${s.language} ${chalk.dim(s.contactId)}  ${cut(s.subject, textWidth(head))}`);
      lines.push(`    ${chalk.dim(cut(s.htmlExcerpt.slice(0, EXCERPT_COLUMNS), 4))}`);
    }
  }
  const block = (title: string, findings: Finding[], color: (t: string) => string) => {
    if (!findings.length) return;
    lines.push('', color(`${title} (${findings.length})`));
    for (const f of findings) {
      const runs: Run[] = [{ text: '  ' }, { text: f.code, colour: color }, { text: `  ${f.message}` }, ...(where(f) ? [{ text: `  [${where(f)}]`, colour: chalk.dim }] : [])];
      lines.push(...laidOut(runs, width, 4));
    }
  };
  block('Errors', render.errors, chalk.red);
  block('Warnings', render.warnings, chalk.yellow);
  block('Information', render.information ?? [], chalk.cyan);
  lines.push('', verdict(response, maxWarnings, chalk));
  return `${lines.join('\n')}\n`;
}


const tooManyWarnings = (response: ValidateResponse, maxWarnings: number | undefined) =>
  maxWarnings !== undefined && response.render.warnings.length > maxWarnings;

/** "6 warnings, more than --max-warnings 5" when the warnings fail the run, else undefined. */
function warningsReason(response: ValidateResponse, maxWarnings: number | undefined): string | undefined {
  return tooManyWarnings(response, maxWarnings) ? `${plural(response.render.warnings.length, 'warning')}, more than --max-warnings ${maxWarnings}` : undefined;
}

/**
 * Why a validation fails (exit 1 or 2), for stderr and CI logs: "2 errors (asset_not_found,
 * template_syntax)", "6 warnings, more than --max-warnings 5", or both; undefined when it passes.
 */
export function failureReason(response: ValidateResponse, maxWarnings: number | undefined): string | undefined {
  const { errors } = response.render;
  const codes = [...new Set(errors.map((f) => f.code))].join(', ');
  const reasons = [errors.length ? `${plural(errors.length, 'error')} (${codes})` : undefined, warningsReason(response, maxWarnings)].filter(Boolean);
  return reasons.length ? reasons.join(' and ') : undefined;
}

export function verdict(response: ValidateResponse, maxWarnings: number | undefined, chalk: ChalkInstance): string {
  const { errors, warnings } = response.render;
  const tooMany = tooManyWarnings(response, maxWarnings);
  if (!errors.length && !tooMany) {
    return chalk.green(`OK: ${response.audience.deliverable} deliverable, ${plural(errors.length, 'error')}, ${plural(warnings.length, 'warning')}`);
  }
  const reasons = [errors.length ? plural(errors.length, 'error') : '', tooMany ? `${plural(warnings.length, 'warning')} (more than --max-warnings ${maxWarnings})` : '']
    .filter(Boolean)
    .join(' and ');
  return chalk.red(`NOT READY: ${reasons}`);
}

/** GitHub workflow commands: the message and properties escaped as the runner expects. */
export const escapeData = (text: string) => text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const escapeProperty = (text: string) => escapeData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');

/**
 * One workflow command per finding (errors as ::error, warnings as ::warning), an ::error
 * saying so when the warnings are more than --max-warnings (the run fails on them, and
 * GitHub reports a failure as an error annotation), then a ::notice with the counts.
 */
export function githubAnnotations(response: ValidateResponse, file: string | undefined, maxWarnings?: number, label?: string): string {
  const line = (kind: 'error' | 'warning' | 'notice', f: Finding) => {
    // A finding with a place in a file (issue 20) points at its line there.
    const at = f.file && f.line ? `file=${escapeProperty(f.file)},line=${f.line}` : file ? `file=${escapeProperty(file)}` : '';
    const props = [at, `title=${escapeProperty(`convx ${f.code}`)}`].filter(Boolean).join(',');
    return `::${kind} ${props}::${escapeData(`${f.message}${where(f) ? ` [${where(f)}]` : ''}`)}`;
  };
  const { audience } = response;
  // the warnings fail the run: the annotation names the errors too, as stderr does (a baseline's reason stays on stderr)
  const tooMany = tooManyWarnings(response, maxWarnings) ? failureReason(response, maxWarnings) : undefined;
  return [
    ...response.render.errors.map((f) => line('error', f)),
    ...response.render.warnings.map((f) => line('warning', f)),
    ...(response.render.information ?? []).map((f) => line('notice', f)),
    ...(tooMany ? [`::error ${file ? `file=${escapeProperty(file)},` : ''}title=convx validate::${escapeData(`not ready: ${tooMany}`)}`] : []),
    `::notice title=convx validate::${escapeData(`${label ? `${label}: ` : ''}${audience.deliverable} of ${audience.intended} deliverable; ${plural(response.render.errors.length, 'error')}, ${plural(response.render.warnings.length, 'warning')}`)}`,
  ].join('\n') + '\n';
}

/** What XML 1.0's Char production leaves out: C0 controls but tab, LF and CR, and the noncharacters U+FFFE and U+FFFF. */
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;
/** A surrogate without its other half (not a character at all). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Text as XML character data or an attribute value: escaped, and every character XML 1.0 forbids
 * left out (controls, U+FFFE, U+FFFF), a lone surrogate made U+FFFD (as UTF-8 would write it), so
 * the document stays well-formed whatever a subject or a message holds.
 */
export const xml = (text: string) =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(NOT_XML, '')
    .replace(LONE_SURROGATE, '\ufffd');

/**
 * One test case per check: errors fail; warnings fail only beyond --max-warnings (each such
 * failure's message begins with why: "6 warnings, more than --max-warnings 5: …"), else they
 * are reported as output.
 */
/**
 * A run that could not validate (a dataset or baseline missing), in a CI format: an ::error
 * annotation, or a JUnit document of one errored test case. Its message is the error's.
 */
export function setupFailure(format: 'github' | 'junit', message: string): string {
  if (format === 'github') return `::error title=convx::${escapeData(message)}\n`;
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="convx validate" tests="1" failures="0" errors="1">
  <testsuite name="convx validate" tests="1" failures="0" errors="1" skipped="0">
    <testcase classname="convx.validate" name="setup">
      <error type="error" message="${xml(message.split('\n')[0]!)}">${xml(message)}</error>
    </testcase>
  </testsuite>
</testsuites>
`;
}

export function junitReport(response: ValidateResponse, name: string, maxWarnings?: number, ignored: ReadonlySet<string> = new Set()): string {
  return junitReports([{ response, name }], maxWarnings, ignored);
}

/** One test suite per request (several files in one run, issue 20), in one document. */
export function junitReports(results: readonly { response: ValidateResponse; name: string }[], maxWarnings?: number, ignored: ReadonlySet<string> = new Set()): string {
  const suites = results.map(({ response, name }) => junitSuite(response, name, maxWarnings, ignored));
  const tests = suites.reduce((n, s) => n + s.tests, 0);
  const failures = suites.reduce((n, s) => n + s.failures, 0);
  const skipped = suites.reduce((n, s) => n + s.skipped, 0);
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="convx validate" tests="${tests}" failures="${failures}"${skipped ? ` skipped="${skipped}"` : ''}>
${suites.map((s) => s.xml).join('\n')}
</testsuites>
`;
}

/** The failure of a test case whose findings --fail-on made fatal (they are among the errors). */
const madeFatal = (fatal: Finding[]) =>
  `\n      <failure type="error" message="${xml(`made fatal by --fail-on: ${fatal[0]!.message}`)}">${xml(fatal.map((f) => f.message).join('\n'))}</failure>\n    `;

/** A check --ignore left out: a skipped test case (it was not judged). */
const SKIPPED = '\n      <skipped message="left out by --ignore"/>\n    ';
/** A check of a request that cannot be read or is not valid: it did not run. */
const NOT_CHECKED = '\n      <skipped message="not checked: the request is not valid"/>\n    ';

function junitSuite(response: ValidateResponse, name: string, maxWarnings: number | undefined, ignored: ReadonlySet<string>): { xml: string; tests: number; failures: number; skipped: number } {
  const tooMany = warningsReason(response, maxWarnings);
  const cases: string[] = [];
  let failures = 0;
  const findings = (code: string, list: Finding[]) => list.filter((f) => f.code === code);
  // a request that cannot be read or is not valid is checked no further: its other cases did not run
  const { errors, warnings } = response.render;
  const unchecked = errors.length > 0 && errors.every((f) => f.code === 'invalid_request') && warnings.length === 0 && !response.render.information?.length;
  const notRun = (code: string) => (code !== 'invalid_request' && unchecked ? NOT_CHECKED : ignored.has(code) ? SKIPPED : '');
  for (const code of CHECKS.errors) {
    const found = findings(code, response.render.errors);
    if (found.length) failures++;
    cases.push(
      `    <testcase classname="convx.validate.errors" name="${code}">${
        found.length ? `\n      <failure type="error" message="${xml(found[0]!.message)}">${xml(found.map((f) => f.message).join('\n'))}</failure>\n    ` : notRun(code)
      }</testcase>`,
    );
  }
  for (const code of CHECKS.warnings) {
    const found = findings(code, response.render.warnings);
    // A warning made fatal by --fail-on is among the errors: its case fails as an error's does.
    const fatal = findings(code, response.render.errors);
    let body = '';
    if (fatal.length) {
      failures++;
      body = madeFatal(fatal);
    } else if (found.length && tooMany) {
      failures++;
      // The message says why a warning fails here: the run's warnings are more than --max-warnings.
      body = `\n      <failure type="warning" message="${xml(`${tooMany}: ${found[0]!.message}`)}">${xml(found.map((f) => f.message).join('\n'))}</failure>\n    `;
    } else if (found.length) body = `\n      <system-out>${xml(found.map((f) => `warning: ${f.message}`).join('\n'))}</system-out>\n    `;
    else body = notRun(code);
    cases.push(`    <testcase classname="convx.validate.warnings" name="${code}">${body}</testcase>`);
  }
  for (const code of CHECKS.information) {
    const found = findings(code, response.render.information ?? []);
    const fatal = findings(code, response.render.errors);
    let body = found.length ? `\n      <system-out>${xml(found.map((f) => `information: ${f.message}`).join('\n'))}</system-out>\n    ` : notRun(code);
    if (fatal.length) {
      failures++;
      body = madeFatal(fatal);
    }
    cases.push(`    <testcase classname="convx.validate.information" name="${code}">${body}</testcase>`);
  }
  const total = CHECKS.errors.length + CHECKS.warnings.length + CHECKS.information.length;
  const skipped = cases.filter((c) => c.includes('<skipped ')).length;
  const xmlText = `  <testsuite name="${xml(name)}" tests="${total}" failures="${failures}" errors="0" skipped="${skipped}">
${cases.join('\n')}
  </testsuite>`;
  return { xml: xmlText, tests: total, failures, skipped };
}
