/**
 * The variables a template prints, judged against what exists (issue 20, "what the
 * check misses"): a contact field resolves by its camelCase key or by the contacts
 * file's own column name (`contact.firstName` and `contact.first_name` are one
 * field); a field no contact has, or a variable the request does not give, is an
 * unknown_variable error with the nearest names; one empty for every deliverable
 * recipient is an empty_variable error; one empty for some stays an
 * unresolved_variable warning (delivery.ts). Pure: the columns and counts are given.
 */
import { closest } from '../model/closest.js';
import type { Finding } from '../model/validation.js';
import { plural } from '../words.js';
import { unresolvedVariables, type Findings, type PrintedVariable, type ResolvedAsset } from './delivery.js';
import { testedVariables } from './templates.js';

/** A contacts column as a template's camelCase key: first_name is firstName. */
export const camelKey = (column: string) => column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const snakeKey = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * The contacts column a printed `contact.…` variable reads (its second step, by the
 * column's own name or its camelCase key), undefined when no column is it or the
 * variable is `contact` alone. `columns`: the contact's columns, none of ours.
 */
export function contactColumn(variable: PrintedVariable, columns: ReadonlySet<string>): string | undefined {
  const field = variable.source === 'contact' ? variable.path[1] : undefined;
  if (field === undefined) return undefined;
  if (columns.has(field)) return field;
  const snake = snakeKey(field);
  if (columns.has(snake)) return snake;
  // A key whose column has a digit after an underscore (address_2 is address2): found by the key the column gives.
  for (const column of columns) if (camelKey(column) === field) return column;
  return undefined;
}

/** Liquid's own properties of an array or a string, which a request's value need not hold. */
const BUILT_IN = new Set(['size', 'first', 'last']);

/** The first step of a variable's path that the request's variables do not hold ("shop.nmae": nmae and its siblings); undefined when all are there. */
function missingStep(path: readonly string[], variables: Record<string, unknown>, keysOf: (object: object) => string[]): { at: string; siblings: string[] } | undefined {
  let current: unknown = variables;
  for (let i = 0; i < path.length; i++) {
    const key = path[i]!;
    if ((Array.isArray(current) || typeof current === 'string') && BUILT_IN.has(key)) return undefined;
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) {
      const siblings = current !== null && typeof current === 'object' ? keysOf(current) : [];
      return { at: path.slice(0, i + 1).join('.'), siblings: i === 0 ? [...siblings, 'contact'] : siblings };
    }
    current = (current as Record<string, unknown>)[key];
  }
  return undefined;
}

/**
 * The most of the request's variable keys a suggestion ranks (the first, in the request's order):
 * each costs an edit distance, and listing 30,000 keys for each of 500 unknown names took seconds
 * (a suggestion over 60,000 keys for each of 3,000 held a server's main thread for 30 s).
 */
export const MAX_SUGGESTED_AMONG = 1000;

/**
 * The unknown names of one validation that get a did-you-mean, the first ones: each ranks up to
 * MAX_SUGGESTED_AMONG keys of up to 64 characters (1,000 unknown names over 1,000 keys held the
 * main thread for 28 s); the others say what is missing without one.
 */
export const MAX_SUGGESTIONS = 20;

/** What a variable may be: the contacts' columns and the request's variables; the did-you-means left (none: no bound). */
export interface Known {
  columns: ReadonlySet<string>;
  variables: Record<string, unknown>;
  suggestions?: SuggestionBudget;
}

/** How many did-you-means a validation has left (MAX_SUGGESTIONS). */
export interface SuggestionBudget {
  left: number;
}

export const suggestionBudget = (): SuggestionBudget => ({ left: MAX_SUGGESTIONS });

/** closest() while the budget lasts (none given: always), then no suggestion. */
const suggester =
  (budget: SuggestionBudget | undefined) =>
  (name: string, among: string[]): string[] => {
    if (budget) {
      if (budget.left <= 0) return [];
      budget.left--;
    }
    return closest(name, among);
  };

/** Each object's first MAX_SUGGESTED_AMONG keys, listed once for the findings of one asset (not once a variable). */
function firstKeys(): (object: object) => string[] {
  const listed = new WeakMap<object, string[]>();
  return (object) => listed.get(object) ?? listed.set(object, Object.keys(object).slice(0, MAX_SUGGESTED_AMONG)).get(object)!;
}

/** The nearest name only: a list of near ones reads as noise. */

const didYouMean = (names: string[]) => (names.length ? `; did you mean ${names[0]}?` : '');

/** unknown_variable for a printed variable that exists nowhere, undefined for one that exists. */
function unknownVariable(
  asset: ResolvedAsset,
  variable: PrintedVariable,
  columns: ReadonlySet<string>,
  variables: Record<string, unknown>,
  keysOf: (object: object) => string[],
  suggest: (name: string, among: string[]) => string[],
  printed = true,
): Finding | undefined {
  const { key, fields } = variable;
  let why: string;
  if (variable.source === 'contact') {
    const field = variable.path[1];
    if (field === undefined || contactColumn(variable, columns) !== undefined) return undefined;
    // Suggested as written: a snake_case name among the columns, a camelCase one among the keys.
    const names = field.includes('_') ? [...columns] : [...columns].map(camelKey);
    why = `the contacts have no field ${field}${didYouMean(suggest(field, names))}`;
  } else {
    const missing = missingStep(variable.path, variables, keysOf);
    if (!missing) return undefined;
    why = `the request's variables have no ${missing.at}${didYouMean(suggest(missing.at.split('.').pop()!, missing.siblings))}`;
  }
  return {
    code: 'unknown_variable',
    message: `${printed ? `{{ ${key} }}` : key} in ${fields.join(', ')}: ${why}`,
    assetRef: asset.ref,
    ...(asset.language ? { language: asset.language } : {}),
    field: fields[0]!,
  };
}

/** unknown_variable for each variable an asset reads without printing it plainly (delivery.ts referencedVariablesOf) that exists nowhere. */
export function unknownReferences(asset: ResolvedAsset, referenced: readonly PrintedVariable[], known: Known): Finding[] {
  const keysOf = firstKeys();
  const suggest = suggester(known.suggestions);
  return referenced
    .filter((variable) => variable.source !== 'contact' || variable.path.length >= 2)
    .flatMap((variable) => unknownVariable(asset, variable, known.columns, known.variables, keysOf, suggest, false) ?? []);
}

/**
 * The findings of the variables an asset prints: unknown_variable and empty_variable
 * (errors), unresolved_variable (warnings). `empty`: how many of the asset's
 * `recipients` (deliverable) would see each empty, by key.
 */
export function variableFindings(
  asset: ResolvedAsset,
  printed: readonly PrintedVariable[],
  known: Known,
  empty: ReadonlyMap<string, number>,
  recipients: number,
): Findings {
  const errors: Finding[] = [];
  const partly: PrintedVariable[] = [];
  // the variables each part tests, read once a part (not once a variable: 500 of them in a long part took seconds)
  const testedIn = new Map<string, Set<string>>();
  const keysOf = firstKeys();
  const suggest = suggester(known.suggestions);
  const tested = (field: string) => testedIn.get(field) ?? testedIn.set(field, testedVariables(asset.content[field as keyof typeof asset.content] ?? '')).get(field)!;
  for (const variable of printed) {
    // `{{ contact }}` alone prints the object: nothing to judge.
    if (variable.source === 'contact' && variable.path.length < 2) continue;
    const unknown = unknownVariable(asset, variable, known.columns, known.variables, keysOf, suggest);
    if (unknown) {
      errors.push(unknown);
      continue;
    }
    const count = empty.get(variable.key) ?? 0;
    // empty for everyone, but the template tests it ({% if contact.surname %}): its absence is handled, a warning at most
    const guarded = variable.fields.some((field) => tested(field).has(variable.key));
    if (count > 0 && count >= recipients && !guarded) {
      const whose = variable.source === 'contact' ? 'no recipient has a value' : 'the request gives it no value';
      errors.push({
        code: 'empty_variable',
        message: `{{ ${variable.key} }} in ${variable.fields.join(', ')} is empty for every deliverable recipient (${plural(count, 'recipient')}: ${whose}; give it one, or a default filter)`,
        assetRef: asset.ref,
        ...(asset.language ? { language: asset.language } : {}),
        field: variable.fields[0]!,
        count,
      });
    } else if (count > 0) partly.push(variable);
  }
  return { errors, warnings: unresolvedVariables(asset, partly, empty) };
}
