/** Reloads of a served dataset (issue 9, finding 6): none is lost, the newest complete data wins, a failure keeps the old. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DatasetHolder, ServedDataset, type ServeOptions } from '../src/server/plugins.js';
import { parseItemsQuery } from '../src/model/query.js';
import { csv, dataset } from './helpers.js';

const ORDER_COLUMNS = ['order_id', 'contact_id', 'datetime', 'currency', 'amount_wo_tax', 'amount_w_tax'];
const orders = (n: number) =>
  csv(ORDER_COLUMNS, Array.from({ length: n }, (_, i) => [`o${i + 1}`, 'c1', `2024-03-${String(2 + i).padStart(2, '0')}T10:00:00Z`, 'EUR', '1', '1']));

function versionedDataset() {
  return dataset({
    'orders.csv': orders(1),
    'touches.csv': csv(['contact_id', 'datetime', 'touch', 'source_type', 'source_id'], [['c1', '2024-03-01T00:00:00Z', 'click', 'campaign', 'k']]),
  });
}

async function servedCount(holder: DatasetHolder): Promise<number> {
  const backend = await holder.current.backend('default');
  try {
    return (await backend.items(parseItemsQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-31' }))).paging.totalCount;
  } finally {
    await backend.close();
  }
}

/** The real load, held after it has read the files until the test lets it finish. */
function gatedLoader() {
  const calls: { release: () => void; read: Promise<void> }[] = [];
  const load = async (dir: string, options: ServeOptions) => {
    let release!: () => void;
    let markRead!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const read = new Promise<void>((resolve) => (markRead = resolve));
    calls.push({ release, read });
    try {
      return await ServedDataset.load(dir, options);
    } finally {
      markRead();
      await gate;
    }
  };
  return { load, calls };
}

describe('reload', () => {
  it('a signal during a reload schedules one more, which picks up files changed after the first began', async () => {
    const dir = versionedDataset();
    const { load, calls } = gatedLoader();
    const holder = new DatasetHolder(await ServedDataset.load(dir), {}, load);
    try {
      writeFileSync(join(dir, 'orders.csv'), orders(2));
      const first = holder.reload();
      await calls[0]!.read; // the first reload has read version 2 of the files
      writeFileSync(join(dir, 'orders.csv'), orders(3));
      const second = holder.reload();
      const third = holder.reload(); // more signals meanwhile fold into the one scheduled
      expect(third).toBe(second);
      calls[0]!.release();
      await first;
      expect(await servedCount(holder)).toBe(2);
      while (calls.length < 2) await new Promise((r) => setTimeout(r, 5));
      calls[1]!.release();
      await second;
      expect(calls).toHaveLength(2); // exactly one more reload, not one per signal
      expect(await servedCount(holder)).toBe(3);
      expect(holder.generation).toBe(3);
      expect(holder.busy).toBe(false);
    } finally {
      calls.forEach((c) => c.release());
      await holder.close();
    }
  });

  it('a failed reload keeps the data served before, and the scheduled one after it still runs', async () => {
    const dir = versionedDataset();
    const { load, calls } = gatedLoader();
    const holder = new DatasetHolder(await ServedDataset.load(dir), {}, load);
    try {
      writeFileSync(join(dir, 'orders.csv'), 'not,a\nvalid,orders file\n');
      const failing = holder.reload();
      await calls[0]!.read;
      writeFileSync(join(dir, 'orders.csv'), orders(4));
      const next = holder.reload();
      calls[0]!.release();
      await expect(failing).rejects.toThrow(/required column is missing/);
      expect(await servedCount(holder)).toBe(1);
      while (calls.length < 2) await new Promise((r) => setTimeout(r, 5));
      calls[1]!.release();
      await next;
      expect(await servedCount(holder)).toBe(4);
    } finally {
      calls.forEach((c) => c.release());
      await holder.close();
    }
  });

  it('a reload asked for when none runs starts at once and is not held back by requests on the old data', async () => {
    const dir = versionedDataset();
    const holder = new DatasetHolder(await ServedDataset.load(dir), {});
    const old = await holder.current.backend('default'); // a request still running on the old data
    try {
      writeFileSync(join(dir, 'orders.csv'), orders(5));
      await holder.reload();
      expect(await servedCount(holder)).toBe(5);
      expect((await old.items(parseItemsQuery({ dateFrom: '2024-03-01', dateTo: '2024-03-31' }))).paging.totalCount).toBe(1);
    } finally {
      await old.close();
      await holder.close();
    }
  });
});
