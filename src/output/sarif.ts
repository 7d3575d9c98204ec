/**
 * `convx validate -o sarif`: the findings as a SARIF 2.1.0 log, as eslint and CodeQL write one, for
 * GitHub code scanning (github/codeql-action/upload-sarif). One rule per check code of CHECKS (every
 * code, found or not, so that the rules stay the same from run to run), one result per finding with
 * its rule, level, message and location: the template file and line where the finding has them, else
 * the request file. With --baseline, each result says whether it is new (baselineState) and the
 * audience and sample changes are results of their own rules. Pure; the same bytes for the same input.
 */
import { pathToFileURL } from 'node:url';
import type { BaselineComparison } from '../model/baseline.js';
import { CHECKS, type Finding, type ValidateResponse } from '../model/validation.js';
import { jsonDocument } from './format.js';

export const SARIF_SCHEMA = 'https://json.schemastore.org/sarif-2.1.0.json';

type Level = 'error' | 'warning' | 'note';

/** The lists of CHECKS and the level of their findings (an `information` list, where there is one, is a note). */
const SEVERITIES: [string, Level][] = [
  ['errors', 'error'],
  ['warnings', 'warning'],
  ['information', 'note'],
];

/** The rules of the comparison with a baseline (--baseline), beside those of the checks. */
export const BASELINE_RULES = {
  baseline_audience_drift: 'the deliverable audience differs from the baseline',
  baseline_sample_changed: 'a rendered sample differs from the baseline',
} as const;

interface Rule {
  id: string;
  name: string;
  shortDescription: { text: string };
  defaultConfiguration: { level: Level };
  properties: { tags: string[] };
}

/** Every rule: each check code of CHECKS in order, then the baseline's. */
export function sarifRules(): Rule[] {
  const checks = CHECKS as unknown as Record<string, readonly string[] | undefined>;
  const rules = SEVERITIES.flatMap(([list, level]) =>
    (checks[list] ?? []).map((code) => rule(code, code.replace(/_/g, ' '), level)),
  );
  return [...rules, ...Object.entries(BASELINE_RULES).map(([code, text]) => rule(code, text, 'note'))];
}

const rule = (id: string, text: string, level: Level): Rule => ({
  id,
  name: id.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase()),
  shortDescription: { text },
  defaultConfiguration: { level },
  properties: { tags: ['convx', id.startsWith('baseline_') ? 'baseline' : 'delivery'] },
});

/**
 * A file's artifact location: a relative path against the checkout (%SRCROOT%), an absolute one as a
 * file: URI. Each segment of a relative path is percent-encoded whole (encodeURIComponent), `/` kept:
 * a `#` or `?` of a name is not a fragment or query, a `%` not an escape, and a colon (`%3A`) never
 * makes a first segment a scheme (`x:y.json` is not an absolute URI of scheme x).
 */
function artifactLocation(file: string): { uri: string; uriBaseId?: string } {
  const path = file.replace(/\\/g, '/');
  if (/^([a-zA-Z]:)?\//.test(path)) return { uri: pathToFileURL(path).href };
  return { uri: path.replace(/^(\.\/)+/, '').split('/').map(encodeURIComponent).join('/'), uriBaseId: '%SRCROOT%' };
}

/** Where a finding is: its template file and line, else the request file (no line: a line of an inline template is not one of the file). */
function locations(f: Finding, requestFile: string | undefined) {
  const file = f.file ?? requestFile;
  if (file === undefined) return undefined;
  const region = f.file !== undefined && f.line !== undefined ? { region: { startLine: f.line } } : {};
  return [{ physicalLocation: { artifactLocation: artifactLocation(file), ...region } }];
}

/** What a finding says beyond its message, as SARIF's property bag. */
function properties(f: Finding): Record<string, unknown> | undefined {
  const bag = Object.fromEntries(
    (['assetRef', 'language', 'field', 'contactId', 'count'] as const).filter((k) => f[k] !== undefined).map((k) => [k, f[k]]),
  );
  return Object.keys(bag).length ? bag : undefined;
}

/**
 * The findings of the response that are new since the baseline (by identity, as the comparison found
 * them, information too), counted: of two alike findings of which one is new, one result is new.
 */
function newFindings(comparison: BaselineComparison | undefined): Map<string, number> {
  const fresh = new Map<string, number>();
  for (const c of comparison?.changes ?? []) if (c.kind === 'new_finding') fresh.set(findingId(c.finding!), (fresh.get(findingId(c.finding!)) ?? 0) + 1);
  return fresh;
}

/** Whether a finding is one of the new ones (taking it from the count). */
function takeNew(fresh: Map<string, number>, f: Finding): boolean {
  const left = fresh.get(findingId(f)) ?? 0;
  if (left > 0) fresh.set(findingId(f), left - 1);
  return left > 0;
}

const findingId = (f: Finding & { severity?: string }) => JSON.stringify([f.code, f.message, f.assetRef, f.language, f.field, f.contactId, f.file, f.line]);

/**
 * The SARIF log of a run that could not validate (a dataset or baseline missing): no results, the
 * invocation failed with the reason, so that an upload of the file shows the failure rather than
 * refusing an empty file.
 */
export function sarifFailure(message: string, version: string): string {
  return jsonDocument({
    $schema: SARIF_SCHEMA,
    version: '2.1.0',
    runs: [
      {
        tool: { driver: { name: 'convx', semanticVersion: version, version, rules: sarifRules() } },
        invocations: [{ executionSuccessful: false, toolExecutionNotifications: [{ level: 'error', message: { text: message } }] }],
        results: [],
      },
    ],
  });
}

/**
 * The SARIF log of a validation: `requestFile` as the command line named it (undefined for stdin),
 * the comparison with a baseline when there is one.
 */
export function sarifLog(response: ValidateResponse, requestFile: string | undefined, version: string, comparison?: BaselineComparison): string {
  const rules = sarifRules();
  const index = new Map(rules.map((r, i) => [r.id, i]));
  const fresh = newFindings(comparison);
  const result = (f: Finding, level: Level) => {
    const where = locations(f, requestFile);
    const bag = properties(f);
    return {
      ruleId: f.code,
      ...(index.has(f.code) ? { ruleIndex: index.get(f.code)! } : {}),
      level,
      message: { text: f.message },
      ...(where ? { locations: where } : {}),
      ...(comparison ? { baselineState: takeNew(fresh, f) ? 'new' : 'unchanged' } : {}),
      ...(bag ? { properties: bag } : {}),
    };
  };
  const render = response.render as unknown as Record<string, Finding[] | undefined>;
  const results = SEVERITIES.flatMap(([list, level]) => (render[list] ?? []).map((f) => result(f, level)));
  const changes = (comparison?.changes ?? []).filter((c) => c.kind === 'audience' || c.kind === 'sample');
  for (const c of changes) {
    const code = c.kind === 'audience' ? 'baseline_audience_drift' : 'baseline_sample_changed';
    const text = [c.message, ...(c.diff ?? [])].join('\n');
    results.push({ ...result({ code, message: text }, c.fails ? 'error' : 'note'), baselineState: { new: 'new', gone: 'absent', changed: 'updated' }[c.sample ?? 'changed'] });
  }
  return jsonDocument({
    $schema: SARIF_SCHEMA,
    version: '2.1.0',
    runs: [
      {
        tool: { driver: { name: 'convx', semanticVersion: version, version, rules } },
        columnKind: 'utf16CodeUnits',
        results,
      },
    ],
  });
}
