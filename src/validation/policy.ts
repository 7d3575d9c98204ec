/**
 * Per-code control of a validation's findings, as shellcheck, hadolint and eslint
 * allow: `--ignore CODE` silences a code (its findings are left out of every
 * output and of the exit code), `--fail-on CODE|warning|error` makes codes fatal
 * (such a warning, or information, is reported among the errors, so every format and
 * the exit code treat it as one). Pure: the CLI parses the flags and applies the policy to a
 * response, local or from a server.
 */
import { UsageError } from '../errors.js';
import { closest } from '../model/closest.js';
import { CHECKS, type ValidateResponse } from '../model/validation.js';

export interface FindingPolicy {
  ignore: ReadonlySet<string>;
  /** Warning codes made fatal; every warning with `warning`. */
  failOn: ReadonlySet<string>;
  failOnWarnings: boolean;
}

/** Every code a finding can have (the lists of CHECKS together, whatever lists it has). */
export const knownCodes = (): string[] => Object.values(CHECKS as Record<string, readonly string[]>).flat();

/** The codes of a list flag (comma-separated, repeated), each one known; an unknown one is a usage error listing the valid ones. */
function codesOf(flag: string, value: string | undefined, extra: readonly string[]): string[] {
  if (value === undefined) return [];
  const codes = value.split(',').map((c) => c.trim()).filter(Boolean);
  const known = knownCodes();
  const unknown = codes.filter((c) => !known.includes(c) && !extra.includes(c));
  if (unknown.length) {
    const near = closest(unknown[0]!, [...extra, ...known]);
    const hint = near.length ? `did you mean ${near[0]}?` : undefined;
    throw new UsageError(`${flag}: unknown ${unknown.length === 1 ? 'code' : 'codes'} ${unknown.join(', ')}; the codes are ${[...extra, ...known].join(', ')}`, [], hint);
  }
  return codes;
}

/** The policy of `--ignore` and `--fail-on` (their comma-joined values). */
export function findingPolicy(ignore: string | undefined, failOn: string | undefined): FindingPolicy {
  const ignored = codesOf('--ignore', ignore, []);
  if (ignored.includes('invalid_request')) throw new UsageError('--ignore: invalid_request cannot be ignored: such a request is not validated at all');
  const fatal = codesOf('--fail-on', failOn, ['warning', 'error']);
  const both = fatal.filter((c) => ignored.includes(c));
  if (both.length) throw new UsageError(`${both.join(', ')} is given to both --ignore and --fail-on`);
  return { ignore: new Set(ignored), failOn: new Set(fatal.filter((c) => c !== 'warning' && c !== 'error')), failOnWarnings: fatal.includes('warning') };
}

/** The response under a policy: ignored codes left out, fatal warnings moved to the errors (after the errors found). */
export function applyPolicy(response: ValidateResponse, policy: FindingPolicy): ValidateResponse {
  if (!policy.ignore.size && !policy.failOn.size && !policy.failOnWarnings) return response;
  const kept = (f: { code: string }) => !policy.ignore.has(f.code);
  const fatal = (f: { code: string }) => policy.failOnWarnings || policy.failOn.has(f.code);
  const warnings = response.render.warnings.filter(kept);
  // Information never fails a run, unless its code is named.
  const information = (response.render.information ?? []).filter(kept);
  const named = (f: { code: string }) => policy.failOn.has(f.code);
  const render: ValidateResponse['render'] = {
    ...response.render,
    errors: [...response.render.errors.filter(kept), ...warnings.filter(fatal), ...information.filter(named)],
    warnings: warnings.filter((f) => !fatal(f)),
  };
  const left = information.filter((f) => !named(f));
  if (left.length) render.information = left;
  else delete render.information;
  return { ...response, render };
}
