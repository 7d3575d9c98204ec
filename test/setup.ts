/**
 * Runs before each test file, with or without isolation (the unit project shares modules between
 * files): the temporary directories of the file are removed after it.
 */
import { afterAll } from 'vitest';
import { removeTempDirs } from './temp.js';

afterAll(removeTempDirs);
