/** output/sink.ts: text and the engine's bytes reach the stream in the order written, the bytes as they are. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { streamSink } from '../src/output/sink.js';

function collecting(highWaterMark = 16): { stream: Writable; bytes: () => Buffer; writes: () => number } {
  const parts: Buffer[] = [];
  const stream = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, done) {
      parts.push(Buffer.from(chunk));
      setImmediate(done);
    },
  });
  return { stream, bytes: () => Buffer.concat(parts), writes: () => parts.length };
}

describe('streamSink', () => {
  it('writes text and UTF-8 bytes in the order given, the bytes unchanged (a leading U+FEFF, characters of several bytes)', async () => {
    const out = collecting();
    const sink = streamSink(out.stream);
    const bytes = Buffer.from('\uFEFFŽluťoučký kůň 🐎,"x"\n', 'utf8');
    await sink.write('head,er\n');
    await sink.write(bytes);
    await sink.write('tail\n');
    await sink.write(new Uint8Array(0));
    await sink.flush();
    expect(out.bytes().equals(Buffer.concat([Buffer.from('head,er\n'), bytes, Buffer.from('tail\n')]))).toBe(true);
  });

  it('buffers small texts, and passes bytes on at once after what it buffered', async () => {
    const out = collecting(1 << 20);
    const sink = streamSink(out.stream);
    for (let i = 0; i < 100; i++) await sink.write(`${i}\n`);
    expect(out.writes()).toBe(0);
    await sink.write(Buffer.from('bytes\n'));
    // the buffered text went first, then the bytes, without waiting for a flush
    expect(out.writes()).toBeGreaterThan(0);
    await new Promise((resolve) => out.stream.end(resolve));
    expect(out.bytes().toString('utf8')).toBe(`${Array.from({ length: 100 }, (_, i) => `${i}\n`).join('')}bytes\n`);
  });
});
