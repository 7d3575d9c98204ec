/**
 * CONVX_TIMINGS (src/timings.ts): a command's steps and their wall time on stderr when it ends,
 * nested as they ran; nothing recorded or printed without it; the output the same bytes either way.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatTimings, Timings, timed, timingsAsked, withTimings } from '../src/timings.js';
import { Capture, cli, shop } from './helpers.js';

/** The steps of a printed block of timings: [indent, label, ms, times]. */
function stepsOf(stderr: string): [number, string, number, number][] {
  const block = stderr.slice(stderr.indexOf('timings (CONVX_TIMINGS)'));
  return block
    .split('\n')
    .slice(1)
    .flatMap((line) => {
      const m = /^  ( *)(\S.*?)\s+(\d+) ms(?: \((?:(\d+) times)?(?:, )?(?:running)?\))?$/.exec(line);
      return m ? [[m[1]!.length / 2, m[2]!, Number(m[3]), Number(m[4] ?? 1)] as [number, string, number, number]] : [];
    });
}

describe('timings', () => {
  it('are asked by CONVX_TIMINGS set to anything but "", 0 or false', () => {
    for (const value of ['1', 'yes', 'true', ' 1 ']) expect(timingsAsked({ CONVX_TIMINGS: value }), value).toBe(true);
    for (const value of [undefined, '', ' ', '0', 'false', 'FALSE']) expect(timingsAsked({ CONVX_TIMINGS: value }), String(value)).toBe(false);
  });

  it('record each step under the step it runs in, its time summed over the times it ran, each under its own parent in the order it first started there; a failing step too', async () => {
    const timings = new Timings();
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const answer = await withTimings(timings, async () => {
      await timed('outer', async () => {
        await timed('inner', () => pause(20));
        await timed('inner', () => pause(20));
        await expect(timed('failing', () => Promise.reject(new Error('no')))).rejects.toThrow('no');
      });
      // two at once, each with a step of the same label: each its own time, each under its own
      await Promise.all([timed('a', () => timed('x', () => pause(10))), timed('b', () => pause(5).then(() => timed('x', () => pause(60))))]);
      return 42;
    });
    expect(answer).toBe(42);
    const steps = timings.list();
    expect(steps.map((s) => [s.depth, s.label, s.count])).toEqual([
      [0, 'outer', 1],
      [1, 'inner', 2],
      [1, 'failing', 1],
      [0, 'a', 1],
      [1, 'x', 1],
      [0, 'b', 1],
      [1, 'x', 1],
    ]);
    const ms = (at: number) => steps[at]!.ms;
    expect(ms(1)).toBeGreaterThanOrEqual(30);
    expect(ms(0)).toBeGreaterThanOrEqual(ms(1));
    // a's x is a's (about 10 ms), b's x is b's (about 60 ms)
    expect(ms(4)).toBeLessThan(ms(6));
    expect(ms(6)).toBeGreaterThanOrEqual(50);
    expect(ms(5)).toBeGreaterThanOrEqual(ms(6));
  });

  it('record nothing outside the command that asked for them, and leave the work as it is', async () => {
    const timings = new Timings();
    expect(await timed('before', async () => 'done')).toBe('done');
    await withTimings(timings, () => timed('asked', async () => undefined));
    expect(await timed('after', async () => 7)).toBe(7);
    expect(timings.list().map((s) => s.label)).toEqual(['asked']);
  });

  it('print as an indented list, the times aligned, the start and the total around it', () => {
    const text = formatTimings(
      [
        { label: 'open the dataset', depth: 0, ms: 120.4, count: 1 },
        { label: 'check the values', depth: 1, ms: 24.6, count: 1 },
        { label: 'make attr', depth: 2, ms: 7, count: 3 },
      ],
      { before: 57.2, total: 1234.5 },
    );
    expect(text).toBe(
      [
        'timings (CONVX_TIMINGS), wall time; a step includes the steps indented under it, and steps run at once overlap:',
        '  start (Node, convx\u2019s modules)    57 ms',
        '  open the dataset                120 ms',
        '    check the values               25 ms',
        '      make attr                     7 ms (3 times)',
        '  total                          1235 ms',
        '',
      ].join('\n'),
    );
  });

  it("of a report: each step of opening the dataset, each check, the attribution's relations, the rows and the output, after the same bytes on stdout", async () => {
    const dir = shop({
      orders: [
        { id: 'o1', at: '2024-03-05T10:00:00Z', net: 100 },
        { id: 'o2', at: '2024-03-06T10:00:00Z', net: -5 },
      ],
      touches: [{ at: '2024-03-01T10:00:00Z' }],
    });
    const argv = ['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'];
    const plain = await cli(argv);
    const timed = await cli(argv, { env: { CONVX_TIMINGS: '1' } });
    expect(timed.code).toBe(0);
    expect(timed.stdout).toBe(plain.stdout);
    expect(JSON.parse(timed.stdout).conversions).toHaveLength(1);
    expect(plain.stderr).not.toContain('timings');
    // the negative amount's warning first, then the timings, last
    expect(timed.stderr.indexOf('negative')).toBeGreaterThanOrEqual(0);
    expect(timed.stderr.indexOf('negative')).toBeLessThan(timed.stderr.indexOf('timings (CONVX_TIMINGS)'));
    const steps = stepsOf(timed.stderr);
    expect(steps.map(([depth, label]) => [depth, label])).toEqual([
      [0, 'open the dataset'],
      [1, 'start DuckDB'],
      [1, 'read the files'],
      [1, 'check the values'],
      [1, 'type the tables'],
      [2, 'check negative amounts'],
      [0, 'query'],
      [1, 'attribute the transactions'],
      [2, 'make order_head'],
      [2, 'make clicks'],
      [2, 'make attr'],
      [2, 'make source_info'],
      [2, 'make conv'],
      [1, 'check missing rates'],
      [1, 'read the rows'],
      [0, 'write the output'],
      // in process: no start of Node before run()
      [0, 'total'],
    ]);
    const ms = new Map(steps.map(([depth, label, time]) => [`${depth}${label}`, time]));
    const total = ms.get('0total')!;
    expect(ms.get('0open the dataset')! + ms.get('0query')! + ms.get('0write the output')!).toBeLessThanOrEqual(total + 2);
    expect(ms.get('2make order_head')! + ms.get('2make attr')! + ms.get('2make conv')!).toBeLessThanOrEqual(ms.get('1attribute the transactions')! + 2);
  });

  it('of a command a signal ends (Ctrl-C): the steps so far, the ones still running marked so and counted to the moment, before the process exits', async () => {
    const dir = shop({ orders: [{ id: 'o1', at: '2024-03-05T10:00:00Z', net: 100 }], touches: [{ at: '2024-03-01T10:00:00Z' }] });
    const argv = ['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'];
    // stdout that holds its first write (a reader that stopped reading): the command waits in "write the output"
    let release: (() => void) | undefined;
    let holding: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const stdout = new Writable({
      write(_chunk, _encoding, done) {
        if (release) return done();
        release = done;
        holding();
      },
    });
    let say: (() => void) | undefined;
    const stderr = new Capture();
    const onSignalExit = (handler: () => void) => ((say = handler), () => (say = undefined));
    const ran = cli(argv, { env: { CONVX_TIMINGS: '1' }, stdout, stderr, onSignalExit });
    await held;
    await new Promise((resolve) => setTimeout(resolve, 30));
    // what bin/convx.js does on SIGINT, no command's handler taking it, before it exits
    expect(say).toBeDefined();
    say!();
    const atSignal = stderr.text;
    release!();
    expect((await ran).code).toBe(0);
    // unsubscribed once the command ended, which prints its own
    expect(say).toBeUndefined();
    const running = atSignal.split('\n').filter((line) => line.endsWith('(running)')).map((line) => line.trim().replace(/\s+\d+ ms \(running\)$/, ''));
    expect(running).toEqual(['write the output']);
    const steps = stepsOf(atSignal);
    expect(steps.map(([depth, label]) => [depth, label])).toContainEqual([1, 'attribute the transactions']);
    // the running step counted to the moment (30 ms and more held), within the total so far
    const ms = new Map(steps.map(([depth, label, time]) => [`${depth}${label}`, time]));
    expect(ms.get('0write the output')).toBeGreaterThanOrEqual(25);
    expect(ms.get('0write the output')!).toBeLessThanOrEqual(ms.get('0total')!);
    // the command's own, when it ended: the output's step no longer running
    const after = stderr.text.slice(atSignal.length);
    expect(after).toContain('timings (CONVX_TIMINGS)');
    expect(after).not.toContain('running');
  });

  it('of a command that fails: printed after its error, the exit code as without them', async () => {
    const dir = shop({ orders: [{ id: 'o1', at: 'not a time' }], touches: [{ at: '2024-03-01T10:00:00Z' }] });
    const argv = ['report', '--data', dir, '--from', '2024-03-01', '--to', '2024-03-31', '-o', 'json'];
    const plain = await cli(argv);
    const failed = await cli(argv, { env: { CONVX_TIMINGS: '1' } });
    expect(plain.code).toBe(2);
    expect(failed.code).toBe(2);
    expect(failed.stderr.startsWith(plain.stderr)).toBe(true);
    expect(stepsOf(failed.stderr).map(([depth, label]) => [depth, label])).toEqual([
      [0, 'open the dataset'],
      [1, 'start DuckDB'],
      [1, 'read the files'],
      [1, 'check the values'],
      [0, 'total'],
    ]);
  });
});
