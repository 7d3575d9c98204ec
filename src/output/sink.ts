import type { Writable } from 'node:stream';

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

export function streamSink(stream: Writable | NodeJS.WritableStream): Sink {
  let buffer = '';
  const push = (text: string | Uint8Array) =>
    new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      stream.once('error', onError);
      const ok = stream.write(text, () => undefined);
      const done = () => {
        stream.removeListener('error', onError);
        resolve();
      };
      if (ok) done();
      else stream.once('drain', done);
    });
  /** Writes out what is buffered. */
  const flush = async () => {
    if (buffer === '') return;
    const chunk = buffer;
    buffer = '';
    await push(chunk);
  };
  return {
    async write(text: string | Uint8Array) {
      if (typeof text !== 'string') {
        if (text.length === 0) return;
        await flush();
        await push(text);
        return;
      }
      buffer += text;
      if (buffer.length >= BUFFER_LIMIT) await flush();
    },
    columns: () => terminalColumns(stream),
    flush,
  };
}
