import { it } from 'vitest';
import { join } from 'node:path';
import { cli, SAMPLES, tempDir } from './helpers.js';
import { keptBackends } from './kept-backends.js';
function cpu<T>(label: string, f: () => Promise<T>): Promise<T> {
  const c = process.cpuUsage(); const t = Date.now();
  return f().then((v) => { const d = process.cpuUsage(c); console.log(label, ((d.user + d.system) / 1000).toFixed(0), 'ms cpu', Date.now() - t, 'ms wall'); return v; });
}
const kept = keptBackends();
it('phases', async () => {
  const root = tempDir();
  const file = join(root, 's.duckdb');
  await cli(['data', 'import', SAMPLES, '--into', file]);
  const argv = ['report', '--from', '2024-01-01', '--to', '2024-04-30', '-o', 'json'];
  for (let i = 0; i < 3; i++) await cpu('file cli', () => cli([...argv, '--data', file]));
  for (let i = 0; i < 3; i++) await cpu('file kept', () => kept([...argv, '--data', file]));
  for (let i = 0; i < 3; i++) await cpu('dir cli', () => cli([...argv, '--data', SAMPLES]));
  for (let i = 0; i < 3; i++) await cpu('dir kept', () => kept([...argv, '--data', SAMPLES]));
});
