// Bundles the program that bin/convx.js runs, with rolldown, as CommonJS: dist/cli.js (as tsc
// emitted it) and the modules it imports, commander included, into dist/convx.cjs and one chunk of
// what every start needs; each command's handler (a dynamic import) and what it alone needs into
// chunks of their own, loaded when the command runs; every module once. A start then reads 3 files
// through Node's CommonJS loader, where it read some 20 modules through the ES module loader and
// commander's 5 files (bench/README.md, the fifteenth round). Packages other than commander, jose
// and DuckDB's JavaScript (not its native binding) stay outside, loaded where they were (chalk with
// import(), and so on).
// Part of `npm run build` and of `npm test`. dist/bundle-meta.json lists the modules of dist/ and the
// packages each output holds (test/startup.test.ts reads it to tell what a start loaded), and whether
// it imports an ES module (import()); scripts/compile-cache.cjs then makes V8's code cache of the
// outputs that do not (dist/compile-cache/, read by bin/compile-cache.cjs).
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';
import { parseAst } from 'rolldown/parseAst';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const entry = join(dist, 'cli.js');

/**
 * Packages bundled: commander (plain JavaScript that every start needs), jose (an ES module
 * package that the server's auth imports; the bundle is CommonJS, which could only require() it
 * on Node 20.19 and later, with a warning) and @duckdb/node-api (124 small CommonJS files that
 * every command reading data read, resolved and compiled one by one; src/local/duckdb.ts). Its
 * native binding, @duckdb/node-bindings, stays outside (a .node file found at run time).
 */
const BUNDLED = new Set(['commander', 'jose', '@duckdb/node-api']);

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

// The code cache of the bundle before this one goes first: it holds the code of files that are
// about to change (scripts/compile-cache.cjs makes the new one at the end).
rmSync(join(dist, 'compile-cache'), { recursive: true, force: true });

const bundle = await rolldown({
  input: { convx: entry },
  platform: 'node',
  external: (id) => /^[^./\0]/.test(id) && !id.startsWith(dist) && (id.startsWith('node:') || !BUNDLED.has(packageOf(id))),
  plugins: [plugin],
  logLevel: 'warn',
});
const { output } = await bundle.write({
  dir: dist,
  // CommonJS: a start through Node's CommonJS loader (bin/convx.js is CommonJS too, bin/package.json)
  // skips the ES module loader's set-up and its asynchronous reads, some 7 % of `convx --help`
  format: 'cjs',
  entryFileNames: '[name].cjs',
  chunkFileNames: 'chunk-[hash].cjs',
  // what every start needs in one chunk (else a module shared by the start and a handler would sit
  // in a small chunk of its own, and a start would read a dozen)
  codeSplitting: { groups: [{ name: 'startup', test: (id) => startup.has(id) }] },
});
await bundle.close();

// The outputs of an earlier bundle that this one did not write (their names change with their
// contents) go once this one is complete: a bundle that fails leaves the earlier one as it was.
const written = new Set(output.map((o) => o.fileName));
for (const name of readdirSync(dist)) if (/^(chunk-[\w-]+|convx)\.c?js$/.test(name) && !written.has(name)) rmSync(join(dist, name));

/** True when the code holds an import() (of an ES module package, or of node:fs/promises): compiled through node:vm, it could not run it on Node 20. */
function importsDynamically(code) {
  let found = false;
  const walk = (node) => {
    if (found || node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(walk);
    if (node.type === 'ImportExpression') found = true;
    else for (const key of Object.keys(node)) walk(node[key]);
  };
  walk(parseAst(code));
  return found;
}

/** The package of a module id inside node_modules ("…/node_modules/@a/b/x.js" is "@a/b"), else undefined. */
const packageOfId = (id) => /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(id)?.[1].replace('\\', '/');

const outputs = Object.fromEntries(
  output
    .filter((o) => o.type === 'chunk')
    .map((chunk) => [
      chunk.fileName,
      {
        modules: chunk.moduleIds.filter((id) => id.startsWith(dist + sep)).map(inDist).sort(),
        packages: [...new Set(chunk.moduleIds.map(packageOfId).filter(Boolean))].sort(),
        dynamicImport: importsDynamically(chunk.code),
      },
    ]),
);
writeFileSync(join(dist, 'bundle-meta.json'), `${JSON.stringify(outputs, null, 1)}\n`);
// every module of dist/ that the program can load is in one output, and only one
const held = Object.values(outputs).flatMap((o) => o.modules);
if (new Set(held).size !== held.length) throw new Error('bundle: a module is in two outputs');
if (!held.includes('cli.js')) throw new Error('bundle: no output holds cli.js');

// V8's code cache of the new bundle (bin/compile-cache.cjs). convx runs without it, only slower to
// start: a failure to make it is said, and the build goes on.
// Made without NODE_OPTIONS (a CI's --max-old-space-size, say): V8 rejects code made under other flags
// than a start's, which usually has none.
const { NODE_OPTIONS: _, ...env } = process.env;
const made = spawnSync(process.execPath, [join(root, 'scripts', 'compile-cache.cjs')], { stdio: 'inherit', env });
if (made.status !== 0) process.stderr.write('bundle: no code cache made (convx starts without it)\n');
