/**
 * Where in the request file a finding is (issue 20): a finding about an inline
 * asset points at the part of the asset it is about (`assets[1].html`; a JSON
 * string is one line, so the template's own line stays in the message), a finding
 * about a stored asset (the dataset's, or one it lacks) at the request's reference
 * to it (`assets[0].assetId`), and a finding about a
 * request field (`audience.excludeLists`, an invalid_request's field) at that field.
 * Such a finding gets `file` and `line` (the line in that file). Pure: the lines of
 * the request's values are given (src/commands/request-json.ts).
 */
import type { Finding, ValidateResponse } from '../model/validation.js';

/** The request path of a finding, most precise first; undefined when it is about no place in the request. */
function pathsOf(finding: Finding, body: Record<string, unknown>): string[] {
  const inline = /^inline:(\d+)$/.exec(finding.assetRef ?? '');
  if (inline) return [`assets[${inline[1]}]${finding.field ? `.${finding.field}` : ''}`, `assets[${inline[1]}]`];
  if (finding.assetRef !== undefined) {
    // a stored asset (found or not) at the request's reference to it
    if (!Array.isArray(body.assets)) return [];
    const index = body.assets.findIndex((a) => typeof a === 'object' && a !== null && (a as Record<string, unknown>).assetId === finding.assetRef);
    return index < 0 ? [] : [`assets[${index}].assetId`, `assets[${index}]`];
  }
  if (!finding.field) return [];
  // A request field: itself, then each shorter prefix (the place of an invalid one may be its parent's).
  const steps = finding.field.split(/(?=[.[])/);
  return steps.map((_, i) => steps.slice(0, steps.length - i).join('').replace(/^\./, ''));
}

/** The response with file and line on each finding that is about a place of the request file. */
export function locateFindings(response: ValidateResponse, body: Record<string, unknown>, lines: ReadonlyMap<string, number>, file: string): ValidateResponse {
  const locate = (finding: Finding): Finding => {
    const line = pathsOf(finding, body)
      .map((p) => lines.get(p))
      .find((l) => l !== undefined);
    return line === undefined ? finding : { ...finding, line, file };
  };
  const render = { ...response.render, errors: response.render.errors.map(locate), warnings: response.render.warnings.map(locate) };
  if (render.information) render.information = render.information.map(locate);
  return { ...response, render };
}
