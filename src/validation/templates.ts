/** Liquid templates: syntax, the variables an output needs, rendering. */
import { Liquid } from 'liquidjs';

const engine = new Liquid({ strictVariables: false, strictFilters: true, cache: false });

export interface SyntaxProblem {
  message: string;
  line?: number;
}

export function syntaxProblem(template: string): SyntaxProblem | undefined {
  try {
    engine.parse(template);
    return undefined;
  } catch (error) {
    const message = (error as Error).message;
    const line = /line:(\d+)/.exec(message);
    return { message: message.replace(/,?\s*line:\d+, col:\d+.*$/s, ''), ...(line ? { line: Number(line[1]) } : {}) };
  }
}

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
  const paths: string[][] = [];
  for (const match of template.matchAll(/{{-?([\s\S]*?)-?}}/g)) {
    const expression = match[1]!.trim();
    if (/\|\s*default\b/.test(expression)) continue;
    const initial = /^([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\s*(?:'[^']*'|"[^"]*")\s*\])*)/.exec(expression);
    if (!initial || /^(true|false|nil|null|empty|blank)$/.test(initial[1]!)) continue;
    const path = initial[1]!
      .split(/\.|\[\s*['"]|['"]\s*\]/)
      .filter(Boolean);
    if (local.has(path[0]!)) continue;
    if (!paths.some((p) => p.join('.') === path.join('.'))) paths.push(path);
  }
  return paths;
}

export function render(template: string, scope: Record<string, unknown>): string {
  return engine.parseAndRenderSync(template, scope);
}
