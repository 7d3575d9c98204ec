/**
 * Runs before each test file, with or without isolation (the unit project shares modules between
 * files): the temporary directories of the file are removed after it.
 *
 * The suite runs two files at a time on two cores, and its datasets are small: each DuckDB keeps to
 * one thread (CONVX_THREADS, inherited by the processes the tests spawn; `cli()` and `withBackend()`
 * pass it too), which takes about a fifth of the suite's CPU time away. `npm run bench` runs convx
 * with every core.
 */
import { afterAll } from 'vitest';
import { removeTempDirs } from './temp.js';

process.env.CONVX_THREADS ??= '1';

afterAll(removeTempDirs);
