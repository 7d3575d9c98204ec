/**
 * Issue 20, points 4 to 6 in API mode: against `convx serve` (loopback), --baseline (a local file),
 * -o sarif and -o html (the page asks the server for each sample's whole HTML, options.preview)
 * print what local mode prints, with the same exit code.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, SAMPLES, servedSamples, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';

const DELIVERIES = join(SAMPLES, '..', 'deliveries');

/** samples/shop opened once (for validation) and lent to local mode's commands after the first, which opens it afresh (kept-backends.ts). */
const kept = keptBackends();

describe('baseline, sarif and html in API mode', () => {
  const served = servedSamples('validate-report-secret');
  const api = (argv: string[]) => cli([...argv, '--api', `${served.url()}/v1`, '--delivery-api', `${served.url()}/v4`], { env: { CONVX_TOKEN: served.token() } });

  it('prints what local mode prints, with a baseline of either', async () => {
    const dir = tempDir();
    const base = join(dir, 'base.json');
    const welcome = join(DELIVERIES, 'welcome.json');
    expect((await api(['validate', welcome, '--baseline', base, '--update-baseline'])).code).toBe(0);
    expect(readFileSync(base, 'utf8')).toBe((await cli(['validate', welcome, '--data', SAMPLES, '-o', 'json'])).stdout);
    for (const file of ['welcome.json', 'warnings.json']) {
      for (const format of ['sarif', 'html', 'table', 'json']) {
        const argv = ['validate', join(DELIVERIES, file), '-o', format, '--baseline', base];
        const local = await kept([...argv, '--data', SAMPLES]);
        const remote = await api(argv);
        expect(remote.stdout, `${file} ${format}`).toBe(local.stdout);
        expect([remote.code, remote.stderr]).toEqual([local.code, local.stderr]);
      }
    }
    const page = (await api(['validate', welcome, '-o', 'html'])).stdout;
    expect(page).toContain('<iframe sandbox=""');
    expect(page).not.toContain('The HTML excerpt only'); // the server sent each sample's whole HTML
    expect((await api(['validate', join(DELIVERIES, 'warnings.json'), '--baseline', base])).code).toBe(1); // new findings
  });
});
