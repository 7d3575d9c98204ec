/**
 * Liquid templates on the main thread: the variables an output needs, and the
 * messages of the renderer made fit to show. Parsing and rendering happen in
 * the sandbox (sandbox.ts), never here: both can take unbounded time.
 *
 * Every function here is linear in its input: a template comes from a request.
 */

/**
 * Variables whose value is printed ({{ x }}) without a default filter: a
 * recipient without them gets an empty spot. Variables only tested in
 * {% if %} or given `| default:` are fine without a value.
 */
export function printedVariables(template: string): string[][] {
  const local = boundNames(template);
  const paths = new Map<string, string[]>();
  for (const output of outputs(template)) {
    const expression = output.trim();
    if (/\|\s*default\b/.test(expression)) continue;
    const path = initialPath(expression);
    if (!path || local.has(path[0]!)) continue;
    const key = path.join('.');
    if (!paths.has(key)) paths.set(key, path);
  }
  return [...paths.values()];
}

/** Names the template binds itself: {% for x in … %}, {% assign x = … %}, {% capture x %}, {% increment x %}, and the loops' own. */
function boundNames(template: string): Set<string> {
  const local = new Set(
    [...template.matchAll(/{%-?\s*(?:for|tablerow)\s+([A-Za-z_][\w-]*)\s+in\b|{%-?\s*(?:assign|capture|increment|decrement)\s+([A-Za-z_][\w-]*)/g)].map(
      (m) => m[1] ?? m[2]!,
    ),
  );
  local.add('forloop');
  local.add('tablerowloop');
  return local;
}

const LITERAL = /^(true|false|nil|null|empty|blank)$/;

/** The variable path an expression starts with (`contact.address.city` of `contact.address.city | upcase`), undefined for a literal. */
function initialPath(expression: string): string[] | undefined {
  const initial = /^([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\s*(?:'[^']*'|"[^"]*")\s*\])*)/.exec(expression);
  if (!initial || LITERAL.test(initial[1]!)) return undefined;
  return initial[1]!.split(/\.|\[\s*['"]|['"]\s*\]/).filter(Boolean);
}

/** Liquid's words inside a tag's expression, which are not variables (nor are its parameters, a name and a colon: `limit: 2`). */
const TAG_WORDS = new Set(['and', 'or', 'contains', 'reversed']);

/**
 * Variables a template reads without printing them plainly: the first of an output given `| default`
 * (`{{ contact.frist_name | default: "friend" }}`), and every one a tag's expression names
 * ({% if %}, {% elsif %}, {% unless %}, {% case %}, {% when %}, {% for … in %}, {% tablerow … in %},
 * {% assign … = %}, before its filters). Such a variable may be empty, but one that exists nowhere is
 * as much a mistake as a printed one (unknown_variable). The names the template binds are left out.
 */
export function referencedVariables(template: string): string[][] {
  const local = boundNames(template);
  const paths = new Map<string, string[]>();
  const add = (path: string[] | undefined) => {
    if (path && !local.has(path[0]!) && !TAG_WORDS.has(path[0]!)) paths.set(path.join('.'), path);
  };
  for (const output of outputs(template)) if (/\|\s*default\b/.test(output)) add(initialPath(output.trim()));
  const tags = /{%-?\s*(?:(?:if|elsif|unless|case|when)\s([^%]*)|(?:for|tablerow)\s+[A-Za-z_][\w-]*\s+in\s([^%]*)|assign\s+[A-Za-z_][\w-]*\s*=([^%]*))-?%}/g;
  for (const m of template.matchAll(tags)) {
    // Quoted text and numbers are no variables, a range's dots (1..n) no path; an assign's filters (after |) are Liquid's, not the template's.
    const expression = (m[1] ?? m[2] ?? m[3]!.split('|')[0]!).replace(/'[^']*'|"[^"]*"/g, ' ').replaceAll('..', ' ');
    for (const found of expression.matchAll(/(?<![\w.\]-])[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\s*\])*(?![\w.-]|\s*:)/g)) add(initialPath(found[0]));
  }
  return [...paths.values()];
}

/**
 * The variable paths a template tests in a condition ({% if %}, {% elsif %}, {% unless %},
 * {% case %}): `contact.surname` of `{% if contact.surname != blank %}`. A variable printed only
 * where it is tested has a template that handles its absence.
 */
export function testedVariables(template: string): Set<string> {
  const tested = new Set<string>();
  for (const m of template.matchAll(/{%-?\s*(?:if|elsif|unless|case)\s([^%]*)%}/g)) {
    for (const path of m[1]!.matchAll(/[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*/g)) tested.add(path[0]);
  }
  return tested;
}

/** The inside of each {{ … }} (without whitespace-control dashes), found with indexOf so an unclosed {{ costs one scan. */
function* outputs(template: string): Generator<string> {
  let at = 0;
  for (;;) {
    const open = template.indexOf('{{', at);
    if (open < 0) return;
    const close = template.indexOf('}}', open + 2);
    if (close < 0) return;
    let inside = template.slice(open + 2, close);
    if (inside.startsWith('-')) inside = inside.slice(1);
    if (inside.endsWith('-')) inside = inside.slice(0, -1);
    yield inside;
    at = close + 2;
  }
}

/** Absolute file paths and file URLs (POSIX and Windows); a URL's path after its host is not one. */
const ABSOLUTE_PATH = /file:\/\/\S+|\b[A-Za-z]:\\[^\s"'`]+|(?<![\w.:/~-])\/(?:[\w.@+~-]+\/)+[\w.@+~-]*/g;
const MAX_MESSAGE = 300;

/** A message without any absolute path in it: a response never shows where the server keeps its files. */
export function stripPaths(message: string): string {
  return message.replace(ABSOLUTE_PATH, '<path>');
}

/**
 * A liquidjs error message for a finding: without its ", line:3, col:1"
 * suffix (the line is a field of its own), without paths, and short.
 */
export function templateMessage(raw: string): string {
  let message = raw.slice(0, 2 * MAX_MESSAGE);
  const position = message.search(/line:\d+, col:\d+/);
  if (position >= 0) message = message.slice(0, position);
  message = message.trimEnd();
  if (message.endsWith(',')) message = message.slice(0, -1);
  message = stripPaths(message);
  return message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message;
}
