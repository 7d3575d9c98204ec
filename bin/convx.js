#!/usr/bin/env node
import { processIo, run } from '../dist/cli.js';

// A closed pipe (convx ... | head) is not an error.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});
process.on('SIGINT', () => {
  process.stderr.write('\ninterrupted\n');
  process.exit(130);
});

process.exitCode = await run(process.argv.slice(2), processIo());
