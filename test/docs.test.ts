/**
 * The docs a newcomer walks: the command reference in docs/commands/ is what
 * scripts/gen-docs.js renders from the registry today (else: run `npm run docs`), and every
 * relative link of the Markdown pages leads to a file that exists (and to a heading of it).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderCommandDocs, writeCommandDocs } from '../scripts/gen-docs.js';
import { createProgram } from '../src/cli.js';
import { COMMANDS } from '../src/commands/index.js';
import { CHECKS } from '../src/model/validation.js';
import { tempDir } from './helpers.js';

const ROOT = resolve(__dirname, '..');
const REFERENCE = join(ROOT, 'docs', 'commands');

/** Every Markdown page of the repository a reader is sent to. */
function pages(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : name.endsWith('.md') ? [path] : [];
    });
  const top = ['README.md', 'CONTRIBUTING.md', 'ARCHITECTURE.md', 'SECURITY.md', 'bench/README.md', 'samples/README.md'];
  return [...top.map((p) => join(ROOT, p)).filter((p) => existsSync(p)), ...walk(join(ROOT, 'docs'))];
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes; repeats get -1, -2. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const [, heading] of prose.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = heading!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    result.add(n ? `${slug}-${n}` : slug);
  }
  return result;
}

/** The relative links of a page, outside code: [text](target). */
function links(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

describe('the command reference', () => {
  it('docs/commands/ is what `npm run docs` writes from the registry today', () => {
    const files = renderCommandDocs(createProgram, COMMANDS);
    const fresh = tempDir('convx-docs-');
    writeCommandDocs(fresh, files);
    const committed = existsSync(REFERENCE) ? readdirSync(REFERENCE).filter((n) => n.endsWith('.md')) : [];
    const stale: string[] = [];
    for (const [name, content] of files) {
      const path = join(REFERENCE, name);
      const written = readFileSync(join(fresh, name), 'utf8');
      expect(written).toBe(content);
      if (!existsSync(path) || readFileSync(path, 'utf8') !== written) stale.push(`docs/commands/${name}`);
    }
    for (const name of committed) if (!files.has(name)) stale.push(`docs/commands/${name} (no such command)`);
    expect(stale, `stale command reference: ${stale.join(', ')}; run \`npm run docs\``).toEqual([]);
  });

  it('has a page per visible command and subcommand, none for hidden ones, and each page its examples', () => {
    const files = renderCommandDocs(createProgram, COMMANDS);
    for (const command of COMMANDS) {
      const page = files.get(`${command.name.replace(/ /g, '-')}.md`);
      expect(page, command.name).toContain(`# convx ${command.name}\n`);
      for (const example of command.examples ?? []) expect(page).toContain(example);
    }
    for (const group of ['data', 'auth', 'config']) expect(files.has(`${group}.md`)).toBe(true);
    expect(files.get('README.md')).toContain('[`convx data import`](data-import.md)');
    expect([...files.keys()].some((name) => name.startsWith('help') || name.startsWith('__'))).toBe(false);
    // A hidden command (say a future `__complete`) gets no page and no row in the index.
    const withHidden: typeof createProgram = (...args) => {
      const program = createProgram(...args);
      program.command('secret-thing', { hidden: true }).description('internal');
      return program;
    };
    const rendered = renderCommandDocs(withHidden, COMMANDS);
    expect(rendered.has('secret-thing.md')).toBe(false);
    expect(rendered.get('README.md')).not.toContain('secret-thing');
  });

  it('does not depend on the terminal: the same pages with any COLUMNS or colour setting', () => {
    const saved = { columns: process.stdout.columns, env: { ...process.env } };
    const first = renderCommandDocs(createProgram, COMMANDS);
    try {
      process.stdout.columns = 37;
      process.env.COLUMNS = '37';
      process.env.FORCE_COLOR = '1';
      expect(renderCommandDocs(createProgram, COMMANDS)).toEqual(first);
    } finally {
      process.stdout.columns = saved.columns;
      process.env = saved.env;
    }
  });
});

describe("docs/validation.md's list of checks", () => {
  it('has every check code of convx validate once, with its severity', () => {
    const page = readFileSync(join(ROOT, 'docs', 'validation.md'), 'utf8');
    // its section "Every check at a glance", up to the next
    const readme = page.slice(page.indexOf('## Every check at a glance'), page.indexOf('\n## ', page.indexOf('## Every check at a glance') + 1));
    const listed = [...readme.matchAll(/^\| `([a-z_]+)` \| (error|warning|information) \|/gm)].map((m) => [m[1], m[2]]);
    const severities = { errors: 'error', warnings: 'warning', information: 'information' } as const;
    const expected = Object.entries(CHECKS).flatMap(([list, codes]) => codes.map((code) => [code, severities[list as keyof typeof severities]]));
    expect(listed).toEqual(expected);
  });
});

describe('links in the docs', () => {
  it('every relative link of README.md, CONTRIBUTING.md and docs/**/*.md leads to an existing file and heading', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      const markdown = readFileSync(page, 'utf8');
      for (const link of links(markdown)) {
        const [path, fragment] = link.split('#') as [string, string | undefined];
        const target = path ? resolve(dirname(page), decodeURI(path)) : page;
        const where = `${relative(ROOT, page)} -> ${link}`;
        if (!existsSync(target)) broken.push(`${where} (no such file)`);
        else if (fragment && target.endsWith('.md') && !anchors(readFileSync(target, 'utf8')).has(fragment)) broken.push(`${where} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('README.md and CONTRIBUTING.md exist, and nothing sends a reader outside the repository', () => {
    for (const page of ['README.md', 'CONTRIBUTING.md']) expect(existsSync(join(ROOT, page)), page).toBe(true);
    for (const page of pages()) {
      const markdown = readFileSync(page, 'utf8');
      for (const link of links(markdown)) {
        const [path] = link.split('#');
        if (path) expect(relative(ROOT, resolve(dirname(page), path)).startsWith('..'), `${relative(ROOT, page)} -> ${link}`).toBe(false);
      }
      expect(markdown, relative(ROOT, page)).not.toMatch(/DESIGN\.md|\.\.\/shared/);
    }
  });
});

describe("SECURITY.md's tests", () => {
  /**
   * Each test it cites as `file.test.ts › title` (a describe's name and a test's, `› title` for
   * another of the same file; … where the name goes on) is named so in that file: a renamed test
   * leaves no citation behind.
   */
  it('every test cited by name is named so in its file', () => {
    const text = readFileSync(join(ROOT, 'SECURITY.md'), 'utf8');
    const missing: string[] = [];
    let file = '';
    let cited = 0;
    for (const [, span] of text.matchAll(/`([^`]+)`/g)) {
      const [head, ...names] = span!.split('›').map((s) => s.replace(/\s+/g, ' ').trim());
      if (/^[\w-]+\.test\.ts$/.test(head!)) file = head!;
      if (!names.length || !file) continue;
      const source = readFileSync(join(ROOT, 'test', file), 'utf8').replace(/\s+/g, ' ');
      for (const name of names) {
        cited++;
        // the words of the name around each … and before a %s placeholder
        const pieces = name.split('%s')[0]!.split('…').map((p) => p.trim()).filter(Boolean);
        if (!pieces.every((piece) => source.includes(piece))) missing.push(`${file} › ${name}`);
      }
    }
    expect(cited).toBeGreaterThan(50);
    expect(missing).toEqual([]);
  });
});
