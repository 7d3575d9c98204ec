/**
 * Where templates are parsed and rendered: a worker thread with a Liquid engine
 * that has no file system, liquidjs's own limits, a heap limit, and a hard stop
 * (the worker is terminated) when a part or the whole validation runs out of
 * time. The main thread only waits for messages, so a hostile template never
 * holds up another request; the worst it can do is use up its own budget.
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { RenderLimitName, RenderLimits } from './limits.js';

/** The tags that read template files. A template here has none: each of them is a finding. */
export const FILE_TAGS = ['include', 'render', 'layout'] as const;

/** Cloneable options of the worker's engine; the worker adds a file system that holds nothing, and the limits. */
const ENGINE_OPTIONS = {
  strictVariables: false,
  strictFilters: true,
  cache: false,
  root: [],
  partials: [],
  layouts: [],
  relativeReference: false,
  dynamicPartials: true,
  jekyllInclude: false,
  ownPropertyOnly: true,
  globals: {},
};

/** How long past renderTimeMs the worker may go before it is stopped (liquidjs checks its limit between nodes). */
const GRACE_MS = 100;
/** How long a new worker may take to load liquidjs. */
const STARTUP_MS = 10_000;

/**
 * The worker, as source text: it runs the same in the built package and in the
 * tests (which run the TypeScript sources, where no compiled worker file exists).
 */
const WORKER_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { Liquid, Tag } = require(workerData.liquidjs);
// Nothing here may print: the CLI's stdout is its result (and the worker's streams are not read).
for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace']) console[method] = () => undefined;

const noFiles = () => { throw new Error('templates have no files'); };
const NO_FS = {
  exists: async () => false,
  existsSync: () => false,
  readFile: async () => noFiles(),
  readFileSync: noFiles,
  resolve: (_dir, file) => String(file),
  contains: () => false,
};
class FileAccess extends Error {
  constructor(tag) { super('{% ' + tag + ' %} reads a template file'); this.tag = tag; }
}
const fileTag = (name) => class extends Tag {
  constructor(token, remainTokens, liquid) { super(token, remainTokens, liquid); throw new FileAccess(name); }
  *render() {}
};
let engine;
let engineParseLimit;
function engineFor(parseLimit) {
  if (engine && engineParseLimit === parseLimit) return engine;
  engine = new Liquid({ ...workerData.options, fs: NO_FS, parseLimit });
  for (const name of workerData.fileTags) engine.registerTag(name, fileTag(name));
  engineParseLimit = parseLimit;
  return engine;
}
const LIMITS = [
  ['template render limit exceeded', 'renderTimeMs'],
  ['memory alloc limit exceeded', 'renderMemory'],
  ['parse length limit exceeded', 'templateChars'],
];
function failure(error) {
  const message = String((error && error.message) || error).slice(0, 2000);
  const position = error && error.token && typeof error.token.getPosition === 'function' ? error.token.getPosition() : undefined;
  const line = Array.isArray(position) && Number.isInteger(position[0]) ? position[0] : undefined;
  let cause = error;
  while (cause && !(cause instanceof FileAccess) && cause.originalError) cause = cause.originalError;
  if (cause instanceof FileAccess) return { kind: 'fileAccess', tag: cause.tag, line };
  for (const [text, limit] of LIMITS) if (message.includes(text)) return { kind: 'limit', limit };
  return { kind: 'error', message, line };
}
parentPort.on('message', (job) => {
  let reply;
  try {
    const liquid = engineFor(job.parseLimit);
    const templates = liquid.parse(job.template);
    if (job.op === 'check') reply = { kind: 'ok' };
    else {
      const output = liquid.renderSync(templates, job.scope, { renderLimit: job.renderLimit, memoryLimit: job.memoryLimit });
      reply = Buffer.byteLength(output) > job.outputBytes ? { kind: 'limit', limit: 'outputBytes' } : { kind: 'ok', output };
    }
  } catch (error) {
    reply = failure(error);
  }
  parentPort.postMessage({ id: job.id, ...reply });
});
parentPort.postMessage({ ready: true });
`;

export type LimitOutcome = { kind: 'limit'; limit: RenderLimitName };
export type CheckOutcome =
  | { kind: 'ok' }
  | { kind: 'syntax'; message: string; line?: number }
  | { kind: 'fileAccess'; tag: string; line?: number }
  | LimitOutcome;
export type RenderOutcome = { kind: 'ok'; output: string } | { kind: 'error'; message: string; line?: number } | LimitOutcome;

/** What the worker answers (its shape is ours; it is checked loosely, as anything crossing a boundary). */
interface Reply {
  id?: number;
  ready?: boolean;
  kind?: string;
  output?: string;
  message?: string;
  line?: number;
  limit?: RenderLimitName;
  tag?: string;
}

interface Pooled {
  worker: Worker;
  heapMb: number;
}

/** Workers kept between validations (each takes ~40 ms to start), and at most `max` at once: the rest wait. */
class WorkerPool {
  private live = 0;
  private readonly idle: Pooled[] = [];
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly max: number,
    private readonly maxIdle: number,
  ) {}

  async acquire(heapMb: number): Promise<Pooled> {
    for (;;) {
      const same = this.idle.findIndex((p) => p.heapMb === heapMb);
      if (same >= 0) {
        const [pooled] = this.idle.splice(same, 1);
        pooled!.worker.ref();
        return pooled!;
      }
      if (this.live >= this.max && this.idle.length) this.discard(this.idle.shift()!);
      if (this.live < this.max) {
        this.live++;
        try {
          return await spawn(heapMb);
        } catch (error) {
          this.live--;
          this.waiting.shift()?.();
          throw error;
        }
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** A worker that finished its jobs goes back to the pool; one that was stopped or failed is terminated. */
  release(pooled: Pooled, healthy: boolean): void {
    if (healthy && this.idle.length < this.maxIdle) {
      pooled.worker.unref();
      this.idle.push(pooled);
    } else this.discard(pooled);
    this.waiting.shift()?.();
  }

  private discard(pooled: Pooled): void {
    this.live--;
    void pooled.worker.terminate();
  }
}

function spawn(heapMb: number): Promise<Pooled> {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { liquidjs: createRequire(import.meta.url).resolve('liquidjs'), options: ENGINE_OPTIONS, fileTags: FILE_TAGS },
    resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: Math.min(32, Math.max(4, Math.floor(heapMb / 8))) },
    stdout: true,
    stderr: true,
  });
  // Without a listener an 'error' event would throw in the main thread; each job listens too.
  worker.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    const fail = (error: unknown) => {
      clearTimeout(timer);
      void worker.terminate();
      reject(error instanceof Error ? error : new Error(`the template renderer did not start: ${String(error)}`));
    };
    const timer = setTimeout(() => fail(new Error('the template renderer did not start in time')), STARTUP_MS);
    worker.once('error', fail);
    worker.once('message', (reply: Reply) => {
      clearTimeout(timer);
      worker.off('error', fail);
      if (reply?.ready) resolve({ worker, heapMb });
      else fail(new Error('the template renderer did not start'));
    });
  });
}

/** At most this many validations render at once (each worker may use up to heapMb); the others wait for one. */
export const MAX_RENDER_WORKERS = Math.min(4, Math.max(2, availableParallelism() - 1));
const pool = new WorkerPool(MAX_RENDER_WORKERS, 2);

/**
 * The template work of one validation: parse checks and renders, one at a
 * time on one worker, within the limits. The clock of `requestTimeMs` starts
 * when the first job gets a worker. close() when done.
 */
export class TemplateSandbox {
  private pooled?: Pooled;
  private deadline?: number;
  private nextId = 0;
  /** Set once `requestTimeMs` ran out: every later job answers with that limit at once. */
  budgetExceeded = false;

  constructor(readonly limits: RenderLimits) {}

  async check(template: string): Promise<CheckOutcome> {
    const reply = await this.run({ op: 'check', template });
    if (reply.kind === 'ok') return { kind: 'ok' };
    if (reply.kind === 'limit') return { kind: 'limit', limit: reply.limit! };
    if (reply.kind === 'fileAccess') return { kind: 'fileAccess', tag: reply.tag ?? 'include', ...(reply.line ? { line: reply.line } : {}) };
    return { kind: 'syntax', message: reply.message ?? 'the template cannot be parsed', ...(reply.line ? { line: reply.line } : {}) };
  }

  async render(template: string, scope: Record<string, unknown>): Promise<RenderOutcome> {
    const reply = await this.run({ op: 'render', template, scope });
    if (reply.kind === 'ok') return { kind: 'ok', output: reply.output ?? '' };
    if (reply.kind === 'limit') return { kind: 'limit', limit: reply.limit! };
    return { kind: 'error', message: reply.message ?? 'the template cannot be rendered', ...(reply.line ? { line: reply.line } : {}) };
  }

  /** Gives the worker back (or stops it when a job left it busy). */
  close(): void {
    if (this.pooled) pool.release(this.pooled, true);
    this.pooled = undefined;
  }

  private async run(job: { op: 'check' | 'render'; template: string; scope?: Record<string, unknown> }): Promise<Reply> {
    const { limits } = this;
    if (job.template.length > limits.templateChars) return { kind: 'limit', limit: 'templateChars' };
    if (this.budgetExceeded || (this.deadline !== undefined && Date.now() >= this.deadline)) return this.outOfBudget();
    const pooled = (this.pooled ??= await pool.acquire(limits.heapMb));
    this.deadline ??= Date.now() + limits.requestTimeMs;
    const left = this.deadline - Date.now();
    if (left <= 0) return this.outOfBudget();
    const wait = Math.min(limits.renderTimeMs + GRACE_MS, left);
    const id = ++this.nextId;
    const { worker } = pooled;
    return new Promise<Reply>((resolve) => {
      let done = false;
      const finish = (reply: Reply, healthy: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        if (!healthy) {
          pool.release(pooled, false);
          this.pooled = undefined;
        }
        resolve(reply);
      };
      const onMessage = (reply: Reply) => {
        if (reply?.id === id) finish(reply, true);
      };
      const onError = (error: NodeJS.ErrnoException) =>
        finish(
          error?.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? { kind: 'limit', limit: 'heapMb' }
            : { kind: 'error', message: 'the template renderer failed' },
          false,
        );
      const onExit = () => finish({ kind: 'error', message: 'the template renderer stopped' }, false);
      const timer = setTimeout(() => {
        if (wait < limits.renderTimeMs + GRACE_MS) this.budgetExceeded = true;
        finish({ kind: 'limit', limit: this.budgetExceeded ? 'requestTimeMs' : 'renderTimeMs' }, false);
      }, wait);
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      try {
        worker.postMessage({
          id,
          ...job,
          parseLimit: limits.templateChars,
          renderLimit: limits.renderTimeMs,
          memoryLimit: limits.renderMemory,
          outputBytes: limits.outputBytes,
        });
      } catch (error) {
        // The scope holds something that cannot be copied to the worker.
        finish({ kind: 'error', message: `the data cannot be passed to the renderer: ${(error as Error).message}` }, true);
      }
    });
  }

  private outOfBudget(): Reply {
    this.budgetExceeded = true;
    return { kind: 'limit', limit: 'requestTimeMs' };
  }
}
