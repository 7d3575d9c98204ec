/**
 * Answers on their way to the client. A request's turn (budget.ts) ends when its answer is made,
 * before it is sent; a client that never reads kept its answer in the server's memory for as long
 * as it held the connection open (twelve unread series of 37 MB: 1.3 GB, thirty: 3.2 GB). Two
 * bounds: an answer that makes no progress (not a byte of it taken by the client) for
 * `--send-timeout` closes its connection; and a plugin has at most `perPlugin` large answers on
 * their way at once (its concurrency: what it may run at once), one more being a 503 busy problem
 * with Retry-After rather than another answer held.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { PROBLEM_CONTENT_TYPE, retryLater } from '../problem.js';
import { noteProblem } from './requestlog.js';

/** An answer this long or longer is counted against its plugin while it is sent: a shorter one goes to the kernel's buffers at once. */
export const LARGE_ANSWER_BYTES = 1024 * 1024;
/** Seconds a client refused because its plugin has its large answers on their way is asked to wait. */
const RETRY_SENDING_SECONDS = 5;

export interface SendingLimits {
  /** Milliseconds an answer may make no progress before its connection is closed; 0: no bound. */
  sendTimeoutMs: number;
  /** Large answers of one plugin on their way at once. */
  perPlugin: () => number;
}

export function registerSending(app: FastifyInstance, limits: SendingLimits): void {
  const sending = new Map<string, number>();
  app.addHook('onSend', async (request, reply, payload) => {
    const size = typeof payload === 'string' ? Buffer.byteLength(payload) : Buffer.isBuffer(payload) ? payload.length : 0;
    if (size < LARGE_ANSWER_BYTES) return payload;
    const plugin = request.plugin;
    if (plugin !== undefined) {
      const now = sending.get(plugin) ?? 0;
      if (now >= limits.perPlugin()) {
        const refused = retryLater('busy', `this plugin has ${now} large answers on their way to clients already (at most ${limits.perPlugin()}); try again in ${RETRY_SENDING_SECONDS} s`, RETRY_SENDING_SECONDS);
        reply.removeHeader('etag');
        noteProblem(reply, refused.problem.type);
        void reply.code(refused.problem.status).headers(refused.headers).type(PROBLEM_CONTENT_TYPE);
        return JSON.stringify(refused.problem);
      }
      sending.set(plugin, now + 1);
      reply.raw.once('close', () => {
        const left = (sending.get(plugin) ?? 1) - 1;
        if (left > 0) sending.set(plugin, left);
        else sending.delete(plugin);
      });
    }
    watchProgress(reply.raw, limits.sendTimeoutMs);
    return payload;
  });
}

/**
 * The bytes of a socket not yet taken by the kernel: libuv's write queue (the answer is one write
 * of its whole length, which the stream counts as pending until the last byte is gone; libuv's
 * queue shrinks as the client reads), and what the stream holds before it.
 */
function unsent(socket: Socket): number {
  const handle = (socket as Socket & { _handle?: { writeQueueSize?: number } })._handle;
  return (handle?.writeQueueSize ?? 0) + socket.writableLength;
}

/** Closes the connection of an answer whose bytes the client takes none of for `ms` (checked every `ms`); nothing once it is sent. */
function watchProgress(response: ServerResponse, ms: number): void {
  if (ms <= 0) return;
  const socket = response.socket;
  if (!socket) return;
  let before = Infinity;
  const timer = setInterval(() => {
    const now = unsent(socket);
    if (now === 0 || now < before) {
      before = now;
      return;
    }
    clearInterval(timer);
    socket.destroy();
  }, ms);
  timer.unref();
  response.once('close', () => clearInterval(timer));
}
