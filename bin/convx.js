#!/usr/bin/env node
'use strict';
// CommonJS (bin/package.json), as the bundle it runs: dist/convx.cjs, dist/cli.js bundled with the
// modules it imports (scripts/bundle.js), so a start goes through Node's CommonJS loader alone.
// V8's code cache of the bundle, made by the build (compile-cache.cjs): the bundle's files are then
// not compiled again at each start.
require('./compile-cache.cjs').install(require('node:path').join(__dirname, '..', 'dist'));
const { run } = require('../dist/convx.cjs');

// A failed write (a full disk; a closed pipe, convx ... | head) reaches the callback of the write that
// failed: the command fails with "cannot write the output" (src/output/sink.ts, printed by the one error
// handler), or, for a closed pipe, a reporting command ends with 0 and validate with its verdict
// (docs/exit-codes.md). The stream's 'error' event must not crash the process meanwhile.
process.stdout.on('error', () => undefined);

// Signals go to the handlers a command registers (serve: graceful shutdown, reload);
// without one, SIGINT and SIGTERM end the process with 130 and 143, as a shell expects, after
// what the command asked to say then (onSignalExit: CONVX_TIMINGS's timings so far; not on SIGHUP).
const handlers = new Map();
const lastWords = new Set();
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) {
  process.on(signal, () => {
    const registered = handlers.get(signal);
    if (registered?.size) {
      for (const handler of registered) handler();
      return;
    }
    // not on SIGHUP: the terminal that would show them is gone
    if (signal !== 'SIGHUP') for (const say of lastWords) say();
    if (signal === 'SIGINT') process.stderr.write('\ninterrupted\n');
    process.exit(code);
  });
}

// A command whose answer never came while nothing held the event loop any more ends as Node ends an
// unsettled top-level await: with 13, not 0.
let settled = false;
process.on('exit', () => {
  if (!settled && !process.exitCode) process.exitCode = 13;
});

// process.stdin is made on first use (a stream over fd 0, about 1.5 ms): only a command that reads it pays.
run(process.argv.slice(2), {
  get stdin() {
    return process.stdin;
  },
  get stdinIsTTY() {
    return Boolean(process.stdin.isTTY);
  },
  stdout: process.stdout,
  stderr: process.stderr,
  stdoutIsTTY: Boolean(process.stdout.isTTY),
  stderrIsTTY: Boolean(process.stderr.isTTY),
  env: process.env,
  cwd: process.cwd(),
  now: () => new Date(),
  startedAt: 0,
  onSignal(signal, handler) {
    if (!handlers.has(signal)) handlers.set(signal, new Set());
    handlers.get(signal).add(handler);
    return () => handlers.get(signal).delete(handler);
  },
  onSignalExit(handler) {
    lastWords.add(handler);
    return () => lastWords.delete(handler);
  },
}).then((code) => {
  settled = true;
  process.exitCode = code;
  // A server that gave up waiting for requests stuck in its drain (serve exits 1 then) ends
  // even if something still holds the event loop.
  if (process.argv.slice(2).includes('serve') && code !== 0) setTimeout(() => process.exit(), 2000).unref();
});
