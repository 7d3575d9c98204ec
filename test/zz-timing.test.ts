import { it } from 'vitest';
import { cli, SAMPLES, reportQuery, itemsQuery, shop } from './helpers.js';
import { openLocalBackend } from '../src/local/backend.js';
it('t', async () => {
  const periods = [['2024-01-01','2024-01-31'],['2024-02-01','2024-02-10'],['2024-03-05','2024-03-05'],['2024-04-01','2024-06-30'],['2023-01-01','2023-12-31'],['1900-01-01','9999-12-31']];
  for (const data of [SAMPLES, '/tmp/imp/s.duckdb', '/tmp/imp/gen', '/tmp/imp/gen.duckdb']) {
    let t = performance.now();
    const b = await openLocalBackend(data);
    console.log(data, 'open', (performance.now() - t).toFixed(0));
    t = performance.now();
    for (const [f, to] of periods) {
      const r = await b.allReport(reportQuery(f!, to!));
      for await (const _ of r.rows);
      const i = await b.allItems(itemsQuery(f!, to!));
      for await (const _ of i.rows);
    }
    console.log(data, 'periods', ((performance.now() - t)/periods.length).toFixed(0));
    await b.close();
  }
  const tiny = shop({ orders: [{ id: 'o1', at: '2024-03-02T10:00:00Z' }], touches: [{ at: '2024-03-01T10:00:00Z' }] });
  let t = performance.now();
  for (let i = 0; i < 5; i++) await cli(['report', '--data', tiny, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json']);
  console.log('tiny cli', ((performance.now() - t) / 5).toFixed(0));
  t = performance.now();
  for (let i = 0; i < 5; i++) await cli(['data', 'import', tiny, '--into', '/tmp/imp/tiny.duckdb', '--force']);
  console.log('tiny import', ((performance.now() - t) / 5).toFixed(0));
  t = performance.now();
  for (let i = 0; i < 5; i++) await cli(['report', '--data', '/tmp/imp/tiny.duckdb', '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json']);
  console.log('tiny file cli', ((performance.now() - t) / 5).toFixed(0));
});
