#!/usr/bin/env node
// The benchmark of DESIGN.md section 8: wall time and peak memory per case, measured
// by running the built CLI under /usr/bin/time. Not a test: it prints figures.
//   npm run bench                 quick cases (a few minutes)
//   BENCH_FULL=1 npm run bench    adds 2M orders / 10M touches in Parquet (long)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'convx.js');
const work = join(root, '.bench');
mkdirSync(work, { recursive: true });
const full = process.env.BENCH_FULL === '1';
const hasTime = existsSync('/usr/bin/time');

function measure(label, args, { runs = 3, env = {} } = {}) {
  const results = [];
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    const cmd = hasTime ? '/usr/bin/time' : process.execPath;
    const argv = hasTime ? ['-f', '%M', process.execPath, bin, ...args] : [bin, ...args];
    const run = spawnSync(cmd, argv, { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'ignore', 'pipe'] });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const rssKb = hasTime ? Number(run.stderr.trim().split('\n').at(-1)) : NaN;
    if (run.status !== 0 && run.status !== 1) throw new Error(`${label} failed (${run.status}): ${run.stderr}`);
    results.push({ ms, rssKb });
  }
  const ms = results.map((r) => r.ms).sort((a, b) => a - b);
  const median = ms[Math.floor(ms.length / 2)];
  const peak = Math.max(...results.map((r) => r.rssKb));
  console.log(`${label.padEnd(58)} median ${(median / 1000).toFixed(2).padStart(7)} s   peak ${Number.isFinite(peak) ? `${Math.round(peak / 1024)} MB` : 'n/a'}`);
}

function generate(name, args) {
  const out = join(work, name);
  if (!existsSync(join(out, 'orders.csv')) && !existsSync(join(out, 'orders.parquet'))) {
    console.log(`generating ${name} …`);
    execFileSync(process.execPath, [bin, 'data', 'generate', '--out', out, '--force', '--quiet', ...args], { stdio: 'inherit' });
  }
  return out;
}

console.log(`convx benchmark: node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model}), ${Math.round(totalmem() / 2 ** 30)} GiB\n`);

measure('convx --help', ['--help'], { runs: 5 });
measure('report on samples/shop', ['report', '--data', join(root, 'samples', 'shop'), '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'], { runs: 5 });

const audience = generate('contacts-1m', ['--contacts', '1000000', '--orders', '100', '--touches', '100', '--seed', '7']);
const request = join(work, 'all-contacts.json');
writeFileSync(
  request,
  JSON.stringify({
    audience: { lists: ['l-1', 'l-2', 'l-3', 'l-4'] },
    assets: [{ assetId: 'welcome-cs' }, { assetId: 'welcome-en' }, { assetId: 'welcome' }],
    options: { sampleSize: 3 },
  }),
);
measure('validate an audience of 1,000,000 contacts (CSV)', ['validate', request, '--data', audience, '-o', 'json']);

const medium = generate('orders-200k', ['--contacts', '50000', '--orders', '200000', '--touches', '1000000', '--file-format', 'parquet', '--from', '2024-01-01', '--to', '2024-12-31']);
measure('report, 200k orders / 1M touches (Parquet), one year', ['report', '--data', medium, '--from', '2024-01-01', '--to', '2024-12-31', '-o', 'json']);
measure('items --all -o csv, 200k orders', ['items', '--data', medium, '--from', '2024-01-01', '--to', '2024-12-31', '--all', '-o', 'csv'], { runs: 1 });

if (full) {
  const big = generate('orders-2m', ['--contacts', '500000', '--orders', '2000000', '--touches', '10000000', '--file-format', 'parquet', '--from', '2024-01-01', '--to', '2024-12-31']);
  measure('report, 2M orders / 10M touches (Parquet), one year', ['report', '--data', big, '--from', '2024-01-01', '--to', '2024-12-31', '-o', 'json'], { runs: 1 });
  measure('items --all -o csv, 2M orders', ['items', '--data', big, '--from', '2024-01-01', '--to', '2024-12-31', '--all', '-o', 'csv'], { runs: 1 });
}
