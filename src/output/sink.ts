import type { Writable } from 'node:stream';

/** Where text goes: buffered, honouring backpressure, so millions of rows stream in bounded memory. */
export interface Sink {
  write(text: string): Promise<void>;
  flush(): Promise<void>;
}

const BUFFER_LIMIT = 64 * 1024;

export function streamSink(stream: Writable | NodeJS.WritableStream): Sink {
  let buffer = '';
  const push = (text: string) =>
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
  return {
    async write(text: string) {
      buffer += text;
      if (buffer.length >= BUFFER_LIMIT) {
        const chunk = buffer;
        buffer = '';
        await push(chunk);
      }
    },
    async flush() {
      if (buffer === '') return;
      const chunk = buffer;
      buffer = '';
      await push(chunk);
    },
  };
}
