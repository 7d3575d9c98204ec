// Bundles the program that bin/convx.js runs, with rolldown: dist/cli.js (as tsc emitted it) and the
// modules it imports, commander included, into dist/convx.js and one chunk of what every start
// needs; each command's handler (a dynamic import) and what it alone needs into chunks of their own,
// loaded when the command runs; every module once. A start then reads 3 files, where it read some 20
// modules through Node's ES module loader and commander's 5 CommonJS files (bench/README.md, the
// fifteenth round). Packages other than commander stay outside, loaded where they were (DuckDB's
// package with `require` in src/local/duckdb.ts, and so on).
// Part of `npm run build` and of `npm test`. dist/bundle-meta.json lists the modules of dist/ each
// output holds (test/startup.test.ts reads it to tell which modules a start loaded).
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const entry = join(dist, 'cli.js');

/** Packages bundled: commander alone (plain JavaScript that every start needs). */
const BUNDLED = new Set(['commander']);

/** The package a bare specifier names ("@duckdb/node-api/x" is "@duckdb/node-api"). */
const packageOf = (specifier) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

/** A path of dist/ as the metadata names it: relative to dist/, with `/`. */
const inDist = (path) => relative(dist, path).split(sep).join('/');

/** The modules a start loads: dist/cli.js and what it imports statically, found once the graph is built. */
const startup = new Set();

const plugin = {
  name: 'convx',
  buildEnd() {
    const walk = (id) => {
      if (startup.has(id)) return;
      startup.add(id);
      for (const imported of this.getModuleInfo(id)?.importedIds ?? []) walk(imported);
    };
    walk(entry);
  },
  // A module that reads a file of convx's own beside it (`new URL('./data/x.json', import.meta.url)`)
  // reads it from where its code runs, a chunk in dist/: the path is rebased to dist/ so that it
  // names the same file (src/validation/clients.ts's caniemail data).
  transform(code, id) {
    if (!id.startsWith(dist + sep)) return null;
    const rebased = code.replace(/new URL\((['"])(\.{1,2}\/[^'"]*)\1, import\.meta\.url\)/g, (_, quote, path) => {
      const target = inDist(resolve(dirname(id), path));
      return `new URL(${quote}${target.startsWith('.') ? target : `./${target}`}${quote}, import.meta.url)`;
    });
    return rebased === code ? null : { code: rebased, map: null };
  },
};

// The outputs of an earlier bundle go first: their names change with their contents.
for (const name of readdirSync(dist)) if (/^chunk-[\w-]+\.js$/.test(name) || name === 'convx.js') rmSync(join(dist, name));

const bundle = await rolldown({
  input: { convx: entry },
  platform: 'node',
  external: (id) => /^[^./\0]/.test(id) && !id.startsWith(dist) && (id.startsWith('node:') || !BUNDLED.has(packageOf(id))),
  plugins: [plugin],
  logLevel: 'warn',
});
const { output } = await bundle.write({
  dir: dist,
  format: 'esm',
  entryFileNames: '[name].js',
  chunkFileNames: 'chunk-[hash].js',
  // what every start needs in one chunk (else a module shared by the start and a handler would sit
  // in a small chunk of its own, and a start would read a dozen)
  codeSplitting: { groups: [{ name: 'startup', test: (id) => startup.has(id) }] },
});
await bundle.close();

const outputs = Object.fromEntries(
  output
    .filter((o) => o.type === 'chunk')
    .map((chunk) => [chunk.fileName, chunk.moduleIds.filter((id) => id.startsWith(dist + sep)).map(inDist).sort()]),
);
writeFileSync(join(dist, 'bundle-meta.json'), `${JSON.stringify(outputs, null, 1)}\n`);
// every module of dist/ that the program can load is in one output, and only one
const held = Object.values(outputs).flat();
if (new Set(held).size !== held.length) throw new Error('bundle: a module is in two outputs');
if (!readFileSync(join(dist, 'convx.js'), 'utf8').includes('createProgram')) throw new Error('bundle: dist/convx.js lacks the program');
