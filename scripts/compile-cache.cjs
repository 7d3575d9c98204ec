'use strict';
// Makes dist/compile-cache/ (bin/compile-cache.cjs reads it at each start): runs the commands below
// in this process, on the samples, with the bundle's files compiled through node:vm, then keeps per
// file V8's code for every function compiled so far. A file that imports an ES module (import(),
// dist/bundle-meta.json's dynamicImport) is left out: node:vm cannot run its import() on Node 20.
// Run by scripts/bundle.js after each bundle. Nothing here is needed to run convx: without the
// folder, or from another V8, a start compiles the bundle as Node does.
const { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { Writable, Readable } = require('node:stream');
const { FOLDER, record } = require('../bin/compile-cache.cjs');

const root = join(__dirname, '..');
const dist = join(root, 'dist');
const samples = join(root, 'samples', 'shop');

/** The commands whose code the cache holds: a start, the help, a report in each kind of output, records, a validation. */
const COMMANDS = [
  ['--help'],
  ['report', '--help'],
  ['report', '--data', samples, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'],
  ['report', '--data', samples, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'csv'],
  ['items', '--data', samples, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'jsonl'],
  ['trend', '--data', samples, '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'],
];

async function main() {
  const meta = JSON.parse(readFileSync(join(dist, 'bundle-meta.json'), 'utf8'));
  const names = new Set(Object.keys(meta).filter((name) => meta[name].dynamicImport === false));
  const cached = record(dist, names);
  const { run } = require(join(dist, 'convx.cjs'));
  // A scratch home: no profile of the builder's is read.
  const home = mkdtempSync(join(tmpdir(), 'convx-compile-cache-'));
  const sink = () => new Writable({ write: (_chunk, _encoding, done) => done() });
  try {
    for (const argv of COMMANDS) {
      const env = { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: home, NO_COLOR: '1' };
      const io = { stdin: Readable.from([]), stdinIsTTY: false, stdout: sink(), stderr: sink(), stdoutIsTTY: false, stderrIsTTY: false, env, cwd: root, now: () => new Date(), onSignal: () => () => undefined };
      const code = await run(argv, io);
      if (code !== 0) throw new Error(`convx ${argv.join(' ')} ended with ${code}`);
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  // Written beside dist/compile-cache and renamed over it: a start never reads half a cache.
  const next = join(dist, `${FOLDER}.next`);
  rmSync(next, { recursive: true, force: true });
  mkdirSync(next);
  const files = {};
  for (const { name, length, crc32, data } of cached()) {
    const blob = name.replace(/\.cjs$/, '.bin');
    writeFileSync(join(next, blob), data);
    files[name] = { length, crc32, blob };
  }
  writeFileSync(join(next, 'manifest.json'), `${JSON.stringify({ v8: process.versions.v8, node: process.version, files }, null, 1)}\n`);
  rmSync(join(dist, FOLDER), { recursive: true, force: true });
  renameSync(next, join(dist, FOLDER));
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`compile-cache: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
