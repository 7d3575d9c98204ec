import { existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

/**
 * The workers and every process they start run with jemalloc (Debian's libjemalloc2, which
 * `.ci/run` installs when it is missing) in place of glibc's malloc, when it is installed: about
 * 70 % of the suite's CPU is DuckDB statements on small data, whose planning allocates and frees
 * many small objects, and glibc's malloc took some 15 % of the suite's CPU (`perf`); with jemalloc
 * the suite takes about 12 % less CPU and time. Nothing a test checks depends on the allocator
 * (DuckDB's own buffers come from its bundled jemalloc either way). CONVX_TEST_MALLOC=glibc runs
 * the suite without it.
 */
const JEMALLOC = `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu/libjemalloc.so.2`;
if (process.platform === 'linux' && process.env.CONVX_TEST_MALLOC !== 'glibc' && existsSync(JEMALLOC) && !process.env.LD_PRELOAD?.includes('jemalloc')) {
  // Read by the dynamic loader of each process started from here on: the forked workers inherit it.
  process.env.LD_PRELOAD = [process.env.LD_PRELOAD, JEMALLOC].filter(Boolean).join(' ');
}

/**
 * `npm test` runs every file as one project (WHOLE_SUITE, below); `npm run test:fast` the unit one, `npm run test:e2e` the e2e one. End-to-end files: a test of theirs spawns a process (the built bin/convx.js, `script`, a shell),
 * listens on loopback (`convx serve` in-process or a scripted server), generates a dataset or puts
 * a load on a server. Every other file is a unit file: in process, on small data, and it runs
 * without a build (`npm run test:fast`). A new file that does any of the above belongs here.
 */
const E2E = [
  'dot-ids',
  'api-client',
  'api-failures',
  'api',
  'ci-workflow',
  'cli-conventions',
  'complete',
  'compile-cache',
  'config-install',
  'data-version',
  'drain',
  'examples',
  'empty-results',
  'empty-values',
  'fairness',
  'html-report',
  'validate-html',
  'http-conventions',
  'import',
  'import-append',
  'import-append-property',
  'invariants',
  'load',
  'lookups',
  'ids',
  'openapi',
  'output-write',
  'parameters',
  'progress-line',
  'property',
  'pushdown',
  'serve-pool',
  'split-plugins',
  'staging',
  'server-hardening',
  'server',
  'shards',
  'short-periods-api',
  'startup',
  'table-fit',
  'templates-hardening',
  'trend-api',
  'compare-api',
  'terminal-safe',
  'time-zones',
  'validate',
  'validate-report-api',
  'unreadable-files',
].map((name) => `test/${name}.test.ts`);

/**
 * Every run that names no project (`npm test`, `.ci/run` with it, `npx vitest run`, a file or a few):
 * one project of every file, so the two workers take unit and end-to-end files from one queue, the
 * longest first, and each loads src/, fastify and DuckDB's binding once. As two projects (below) the
 * unit files waited for new workers that loaded and transformed it all again once the end-to-end
 * ones were done: the whole suite took 3-5 % longer (123.6 and 124.0 s against 117.5 and 121.3 s, in
 * turn). `--project unit` or `--project e2e` (`npm run test:fast`, `npm run test:e2e`) picks one of
 * the two. Not keyed on npm's npm_lifecycle_event: `npx` sets it to `npx`, so a whole suite run with
 * `npx vitest run` would run as two projects, its workers started again half-way.
 */
const WHOLE_SUITE = !process.argv.some((arg) => arg.startsWith('--project'));

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    setupFiles: ['test/setup.ts'],
    pool: 'forks',
    // Two test files at a time (the default on 2 cores is one).
    maxWorkers: 2,
    projects: WHOLE_SUITE
      ? [{ extends: true, test: { name: 'all', include: ['test/**/*.test.ts'], isolate: false } }]
      : [
          // One module graph per worker (isolate: false): the files share src/ and DuckDB's binding once loaded.
          { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: E2E, isolate: false } },
          // `npm test` builds first: these run the built binary (bin/convx.js over dist/). Modules shared
          // between files too: loading src/, fastify and DuckDB's binding once per worker, not once per
          // file, takes about 0.8 s of CPU off each file (every file closes what it opens).
          { extends: true, test: { name: 'e2e', include: E2E, isolate: false } },
        ],
  },
});
