/**
 * ARCHITECTURE.md's code map, enforced: every import of src/ (static, dynamic and
 * type-only) against the "must not import" column of its row, no import circle,
 * `--help` reaching no heavy module at load, every path the map names existing, and no function
 * of 80 lines or more.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

interface Import {
  /** The imported module: a path relative to src/ (`local/db.ts`) or a package name. */
  target: string;
  dynamic: boolean;
  typeOnly: boolean;
}

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [relative(SRC, path)] : [];
  });
}

function importsOf(file: string): Import[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Import[] = [];
  const add = (specifier: string, dynamic: boolean, typeOnly: boolean) => {
    const target = specifier.startsWith('.') ? normalize(join(dirname(file), specifier)).replace(/\.js$/, '.ts') : specifier;
    found.push({ target, dynamic, typeOnly });
  };
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const typeOnly = ts.isImportDeclaration(node)
        ? Boolean(node.importClause?.isTypeOnly) ||
          Boolean(
            node.importClause &&
              !node.importClause.name &&
              node.importClause.namedBindings &&
              ts.isNamedImports(node.importClause.namedBindings) &&
              node.importClause.namedBindings.elements.length > 0 &&
              node.importClause.namedBindings.elements.every((e) => e.isTypeOnly),
          )
        : node.isTypeOnly;
      add(node.moduleSpecifier.text, false, typeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteral(arg)) add(arg.text, true, false);
    } else if (ts.isCallExpression(node) && ts.isCallExpression(node.expression) && ts.isIdentifier(node.expression.expression) && node.expression.expression.text === 'createRequire') {
      // createRequire(import.meta.url)('pkg') at module level loads pkg as a static import does (local/duckdb.ts)
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteral(arg)) add(arg.text, false, false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text, false, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const FILES = sourceFiles();
const IMPORTS = new Map(FILES.map((file) => [file, importsOf(file)]));

/** The unit of a file in the map: its folder under src/ (`local/`) or, at the top, the file itself. */
function unitOf(file: string): string {
  const slash = file.indexOf('/');
  return slash < 0 ? file : file.slice(0, slash + 1);
}
const UNITS = [...new Set(FILES.map(unitOf))];

/** The rows of the code map: the units a row names (`src/…` in its first cell) and the units it must not import. */
function codeMapRules(): Map<string, { forbidden: Set<string>; row: string }> {
  const text = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const section = text.slice(text.indexOf('## Code map'));
  const rules = new Map<string, { forbidden: Set<string>; row: string }>();
  for (const line of section.split('\n')) {
    if (!line.startsWith('| `src/')) continue;
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/^src\//, ''));
    const units = names(cells[0]!).filter((n) => UNITS.includes(n));
    const rule = cells[cells.length - 1]!;
    const listed = names(rule);
    const forbidden = new Set(/^anything\b/i.test(rule) ? UNITS.filter((u) => !listed.includes(u)) : listed);
    for (const unit of units) {
      forbidden.delete(unit);
      rules.set(unit, { forbidden, row: cells[0]! });
    }
  }
  return rules;
}

describe('ARCHITECTURE.md, enforced', () => {
  it('every unit of src/ has a row in the code map', () => {
    const rules = codeMapRules();
    expect(UNITS.filter((u) => !rules.has(u))).toEqual([]);
  });

  it("no file imports (statically, dynamically or for a type) what its row's \"must not import\" names", () => {
    const rules = codeMapRules();
    const broken: string[] = [];
    for (const [file, imports] of IMPORTS) {
      const rule = rules.get(unitOf(file));
      for (const { target, dynamic } of imports) {
        if (!FILES.includes(target)) continue;
        const unit = unitOf(target);
        const hit = rule?.forbidden.has(unit) || rule?.forbidden.has(target);
        if (hit) broken.push(`${file} imports ${target}${dynamic ? ' (dynamic import)' : ''}: its row forbids ${unit}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the import graph of src/ has no circle', () => {
    // Tarjan's strongly connected components over every import.
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const circles: string[][] = [];
    let next = 0;
    const connect = (file: string) => {
      index.set(file, next);
      low.set(file, next++);
      stack.push(file);
      onStack.add(file);
      for (const { target } of IMPORTS.get(file) ?? []) {
        if (!IMPORTS.has(target)) continue;
        if (!index.has(target)) {
          connect(target);
          low.set(file, Math.min(low.get(file)!, low.get(target)!));
        } else if (onStack.has(target)) {
          low.set(file, Math.min(low.get(file)!, index.get(target)!));
        }
      }
      if (low.get(file) === index.get(file)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== file);
        if (component.length > 1) circles.push(component.sort());
      }
    };
    for (const file of FILES) if (!index.has(file)) connect(file);
    expect(circles).toEqual([]);
  });

  it('--help stays light: what cli.ts loads at start reaches no heavy package', () => {
    const HEAVY = ['@duckdb/node-api', 'fastify', '@fastify/swagger', 'jose', 'liquidjs', 'htmlparser2', 'ajv', 'undici', '@inquirer/prompts'];
    const reached = new Map<string, string>();
    const walk = (file: string, via: string) => {
      for (const { target, dynamic, typeOnly } of IMPORTS.get(file) ?? []) {
        if (dynamic || typeOnly) continue;
        if (HEAVY.some((h) => target === h || target.startsWith(`${h}/`))) reached.set(target, `${via} -> ${file}`);
        if (IMPORTS.has(target) && !via.includes(` ${target} `)) walk(target, `${via} ${file} `);
      }
    };
    walk('cli.ts', '');
    expect([...reached].map(([pkg, path]) => `${pkg} via${path}`)).toEqual([]);
  });

  it('no function of src/ runs to 80 lines or more (data tables and shell text are not functions)', () => {
    const long: string[] = [];
    let seen = 0;
    for (const file of sourceFiles()) {
      const source = ts.createSourceFile(file, readFileSync(join(SRC, file), 'utf8'), ts.ScriptTarget.Latest, true);
      const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line + 1;
      const visit = (node: ts.Node) => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body) {
          seen++;
          const lines = lineOf(node.getEnd()) - lineOf(node.getStart()) + 1;
          if (lines >= 80) long.push(`${file}:${lineOf(node.getStart())} (${lines} lines)`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(seen).toBeGreaterThan(1000);
    expect(long).toEqual([]);
  });

  it('every src/ path the map names exists', () => {
    const text = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
    const paths = [...text.matchAll(/`(src\/[^`\s]*)`/g)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThan(10);
    expect(paths.filter((p) => !existsSync(join(ROOT, p.replace(/[:#].*$/, ''))))).toEqual([]);
  });
});
