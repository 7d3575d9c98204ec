/**
 * Reports in UTC do not change by a byte (issue 19): report and items on samples/shop, printed by
 * the build before time zones, series and comparisons came (commit cdc848d), kept in
 * test/fixtures/utc/ and compared with today's output. The data version names the files as they
 * lie on disk (size, change time, inode), so it differs between checkouts and is left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, SAMPLES } from './helpers.js';

const FIXTURES = join(import.meta.dirname, 'fixtures', 'utc');
const anyVersion = (text: string) => text.replace(/"dataVersion": "[\w-]+"/g, '"dataVersion": "<version>"');

describe('UTC outputs are those of the build before time zones', () => {
  // report-2024-03-01-2024-03-31.json: command, period and format in the name
  for (const name of readdirSync(FIXTURES)) {
    const [, command, from, to, format] = /^(\w+)-(\d{4}-\d\d-\d\d)-(\d{4}-\d\d-\d\d)\.(\w+)$/.exec(name)!;
    it(`${command} ${from}..${to} -o ${format}`, async () => {
      const run = await cli([command!, '--data', SAMPLES, '--from', from!, '--to', to!, '-o', format!]);
      expect(run.code, run.stderr).toBe(0);
      expect(anyVersion(run.stdout)).toBe(anyVersion(readFileSync(join(FIXTURES, name), 'utf8')));
    });
  }
});
