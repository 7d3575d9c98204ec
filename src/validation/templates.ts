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
  // Names the template binds itself: {% for x in … %}, {% assign x = … %}, {% capture x %}, {% increment x %}.
  const local = new Set(
    [...template.matchAll(/{%-?\s*(?:for|tablerow)\s+([A-Za-z_][\w-]*)\s+in\b|{%-?\s*(?:assign|capture|increment|decrement)\s+([A-Za-z_][\w-]*)/g)].map(
      (m) => m[1] ?? m[2]!,
    ),
  );
  local.add('forloop');
  local.add('tablerowloop');
  const paths = new Map<string, string[]>();
  for (const output of outputs(template)) {
    const expression = output.trim();
    if (/\|\s*default\b/.test(expression)) continue;
    const initial = /^([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\s*(?:'[^']*'|"[^"]*")\s*\])*)/.exec(expression);
    if (!initial || /^(true|false|nil|null|empty|blank)$/.test(initial[1]!)) continue;
    const path = initial[1]!
      .split(/\.|\[\s*['"]|['"]\s*\]/)
      .filter(Boolean);
    if (local.has(path[0]!)) continue;
    const key = path.join('.');
    if (!paths.has(key)) paths.set(key, path);
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
