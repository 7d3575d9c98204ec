/** output/sink.ts: text and the engine's bytes reach the stream in the order written, the bytes as they are; a failed write is an OutputError. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ExitCode, OutputError } from '../src/errors.js';
import { streamSink } from '../src/output/sink.js';

/** A stream that keeps what it is given; `later`: each write completes on a later turn (backpressure), else at once. */
function collecting(highWaterMark = 16, later = true): { stream: Writable; bytes: () => Buffer; parts: () => string[] } {
  const parts: Buffer[] = [];
  const stream = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, done) {
      parts.push(Buffer.from(chunk));
      if (later) setImmediate(done);
      else done();
    },
  });
  return { stream, bytes: () => Buffer.concat(parts), parts: () => parts.map((p) => p.toString('utf8')) };
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
    const out = collecting(1 << 20, false);
    const sink = streamSink(out.stream);
    const text = Array.from({ length: 100 }, (_, i) => `${i}\n`);
    for (const line of text) await sink.write(line);
    expect(out.parts()).toEqual([]);
    await sink.write(Buffer.from('bytes\n'));
    // without a flush: the buffered text in one write, then the bytes in their own
    expect(out.parts()).toEqual([text.join(''), 'bytes\n']);
    await sink.write(new Uint8Array(0));
    expect(out.parts()).toHaveLength(2);
  });

  it('waits while the stream is full: a write past its high-water mark resolves only once the stream has taken it', async () => {
    // The stream holds each write until released: what it was given and not yet taken stays in memory.
    const held: (() => void)[] = [];
    const stream = new Writable({
      highWaterMark: 16,
      write(_chunk, _encoding, done) {
        held.push(done);
      },
    });
    const sink = streamSink(stream);
    let resolved = false;
    const write = sink.write(new Uint8Array(64)).then(() => (resolved = true));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(held).toHaveLength(1);
    expect(resolved).toBe(false);
    held.shift()!();
    await write;
    expect(resolved).toBe(true);
    // Below the mark, a write does not wait: the bytes are with the stream at once.
    const small = streamSink(new Writable({ highWaterMark: 1 << 20, write: (_c, _e, done) => held.push(done) }));
    let quick = false;
    await Promise.race([small.write(new Uint8Array(8)).then(() => (quick = true)), new Promise((resolve) => setImmediate(resolve))]);
    expect(quick).toBe(true);
  });

  it('a failed write rejects the flush that follows it with an OutputError, on a later turn or at once, and every write after it', async () => {
    for (const later of [true, false]) {
      const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      const stream = new Writable({
        write(_chunk, _encoding, done) {
          if (later) setImmediate(() => done(full));
          else done(full);
        },
      });
      const sink = streamSink(stream);
      // the whole text fits the sink's buffer: the failure is of the last bytes, which only the flush sends
      await sink.write('a,b\n1,2\n');
      const failed = await sink.flush().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failed).toBeInstanceOf(OutputError);
      expect((failed as OutputError).message).toBe('cannot write the output: no space left on the device');
      expect((failed as OutputError).exitCode).toBe(ExitCode.output);
      await expect(sink.write(Buffer.from('more'))).rejects.toThrow('cannot write the output');
      // the stream's 'error' event is heard (no uncaught error)
      expect(stream.listenerCount('error')).toBeGreaterThan(0);
    }
  });
});
