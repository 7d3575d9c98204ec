/**
 * The part csvRecordLines and jsonRecordLines share (src/local/lines.ts,
 * recordLines): which records are wanted, where they were found, when the file
 * is opened and when the scan stops. Each case runs for both formats.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { csvRecordLines, jsonRecordLines } from '../src/local/lines.js';
import { tempDir } from './helpers.js';

const LAYOUT = { skipRows: 0, headerBreaks: 0, blankIsRecord: false, breaks: new Map<number, number>() };

/** Each format: a file of four records (0 to 3) on lines 2, 3, 5 and 6, and its scan. */
const FORMATS = [
  {
    name: 'CSV',
    text: 'id\r\n1\r\n2\r\n\r\n3\r\n4\r\n',
    lines: (path: string, wanted: Iterable<number>) => csvRecordLines(path, LAYOUT, wanted),
  },
  {
    name: 'JSON',
    text: '[\r\n{"id": 1},\r\n{"id": 2},\r\n\r\n{"id": 3},\r\n{"id": 4}\r\n]\r\n',
    lines: (path: string, wanted: Iterable<number>) => jsonRecordLines(path, wanted),
  },
];

function file(text: string): string {
  const path = join(tempDir(), 'data');
  writeFileSync(path, text);
  return path;
}

const writers: ChildProcess[] = [];
afterEach(() => {
  for (const child of writers.splice(0)) child.kill();
});

/** A named pipe that yields `text` and then stays open: a scan that reads on waits for more. */
function openEndedPipe(text: string): string {
  const path = join(tempDir(), 'pipe');
  execFileSync('mkfifo', [path]);
  writers.push(spawn('sh', ['-c', 'exec > "$2"; printf %s "$1"; exec sleep 60', 'sh', text, path], { stdio: 'ignore' }));
  return path;
}

describe.each(FORMATS)('$name record lines', ({ text, lines }) => {
  it('places each wanted record once, in any order, duplicates and any iterable alike', async () => {
    const path = file(text);
    expect(await lines(path, [3, 0, 2, 0])).toEqual(new Map([[3, 6], [0, 2], [2, 5]]));
    expect([...(await lines(path, new Set([1]).values()))]).toEqual([[1, 3]]);
  });

  it('leaves out records past the end of the file', async () => {
    expect(await lines(file(text), [2, 7])).toEqual(new Map([[2, 5]]));
  });

  it('opens no file when no record is wanted', async () => {
    expect(await lines(join(tempDir(), 'missing'), [])).toEqual(new Map());
  });

  it('rejects when the file cannot be read', async () => {
    await expect(lines(join(tempDir(), 'missing'), [0])).rejects.toThrow(/ENOENT/);
  });

  it('stops reading once the last wanted record is placed', async () => {
    // The pipe never ends: only a scan that stops at record 1 resolves.
    const path = openEndedPipe(text);
    expect(await lines(path, [1, 0])).toEqual(new Map([[1, 3], [0, 2]]));
  }, 10_000);
});
