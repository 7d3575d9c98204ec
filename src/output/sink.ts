import type { Writable } from 'node:stream';
import { OutputError, PipeClosedError, writeFailure } from '../errors.js';

/** Where text goes: buffered, honouring backpressure, so millions of rows stream in bounded memory. */
export interface Sink {
  /** Text, or text's UTF-8 bytes (the lines the engine wrote: written as they are, after what is buffered). */
  write(text: string | Uint8Array): Promise<void>;
  flush(): Promise<void>;
  /** The width of the terminal the text goes to, or undefined when it is not a terminal. */
  columns?(): number | undefined;
}

/** Columns of a terminal stream: its size, else $COLUMNS (a pseudo-terminal without a size), else 80. */
export function terminalColumns(stream: unknown, env: Record<string, string | undefined> = process.env): number | undefined {
  const tty = stream as { isTTY?: boolean; columns?: number };
  if (!tty.isTTY) return undefined;
  if (typeof tty.columns === 'number' && tty.columns > 0) return tty.columns;
  const columns = Number(env.COLUMNS);
  return Number.isInteger(columns) && columns > 0 ? columns : 80;
}

const BUFFER_LIMIT = 64 * 1024;

/** A write that failed because the reader of the pipe went away. */
export const closedPipe = (error: unknown): boolean => (error as NodeJS.ErrnoException | undefined)?.code === 'EPIPE';

/** Streams a sink has given a listener of 'error' (the failure reaches each write's callback; the event must not crash the process). */
const watched = new WeakSet<object>();

/**
 * A sink over a stream. A write that fails (a full disk, a closed descriptor) rejects this write or
 * a later one, and flush, with an OutputError ("cannot write the output: no space left on the
 * device"): flush waits for the callback of the last write, so a failure of the last bytes is not
 * missed. A closed pipe (EPIPE, `convx … | head`) is a PipeClosedError instead: the error handler ends
 * a reporting command with 0, and validate still ends with its verdict (commands/validate.ts).
 */
export function streamSink(stream: Writable | NodeJS.WritableStream): Sink {
  let buffer = '';
  let failed: OutputError | PipeClosedError | undefined;
  let written: Promise<void> = Promise.resolve();
  if (!watched.has(stream)) {
    watched.add(stream);
    stream.on('error', () => undefined);
  }
  const fail = (): void => {
    if (failed) throw failed;
  };
  const push = async (text: string | Uint8Array) => {
    fail();
    let ok = true;
    written = new Promise<void>((resolve) => {
      ok = stream.write(text, (error?: Error | null) => {
        if (error) failed ??= closedPipe(error) ? new PipeClosedError() : new OutputError(`cannot write the output: ${writeFailure(error)}`);
        resolve();
      });
    });
    // Backpressure: the stream's buffer is full until this write is done (or has failed).
    if (!ok) await written;
    fail();
  };
  /** Writes out what is buffered. */
  const pushBuffer = async () => {
    if (buffer === '') return;
    const chunk = buffer;
    buffer = '';
    await push(chunk);
  };
  return {
    async write(text: string | Uint8Array) {
      if (typeof text !== 'string') {
        if (text.length === 0) return;
        await pushBuffer();
        await push(text);
        return;
      }
      buffer += text;
      if (buffer.length >= BUFFER_LIMIT) await pushBuffer();
    },
    /** Writes out what is buffered, and waits until every write is done (a failure of the last bytes too). */
    async flush() {
      await pushBuffer();
      await written;
      fail();
    },
    columns: () => terminalColumns(stream),
  };
}
