/**
 * Where templates are parsed and rendered: a worker thread with a Liquid engine
 * that has no file system, liquidjs's own limits, a heap limit, and a hard stop
 * (the worker is terminated) when a part or the whole validation runs out of
 * time. The main thread only waits for messages, and a worker is held for one
 * parse or render at a time, shared fairly between plugins, so a hostile
 * template never holds up another request for more than one render; the worst
 * it can do is use up its own budget. The time limits count the renders
 * themselves, never the wait for a worker: a wait that outlasts the request's
 * own time budget is a RenderBudgetError (the server's 503), not a finding.
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
      const output = liquid.renderSync(templates, job.variables, { renderLimit: job.renderLimit, memoryLimit: job.memoryLimit });
      const bytes = Buffer.byteLength(output);
      reply = bytes > job.outputBytes ? { kind: 'limit', limit: 'outputBytes' } : { kind: 'ok', output, bytes };
    }
  } catch (error) {
    reply = failure(error);
  }
  parentPort.postMessage({ id: job.id, ...reply });
});
parentPort.postMessage({ ready: true });
`;

/** A limit the work ran into: a finding about the template. */
export type LimitOutcome = { kind: 'limit'; limit: RenderLimitName };

/**
 * The request's time budget (the server's --query-timeout, which runs from the request's
 * arrival) ran out in the sandbox: while it waited for a renderer that other validations were
 * using (`waiting`), or during a render. Not a finding about the template: the server answers
 * 503 with Retry-After (busy when waiting, query-timeout otherwise).
 */
export class RenderBudgetError extends Error {
  constructor(
    readonly waiting: boolean,
    readonly budgetMs: number,
  ) {
    super(
      waiting
        ? `the template renderers stayed busy with other validations until this request's time budget of ${budgetMs / 1000} s ran out; try again later`
        : `the request's time budget of ${budgetMs / 1000} s ran out during its template renders`,
    );
    this.name = 'RenderBudgetError';
  }
}
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
  bytes?: number;
}

interface Pooled {
  worker: Worker;
  heapMb: number;
}

/** A validation waiting for a worker; it gets one, or 'busy' when its request's time budget runs out first. */
interface Waiter {
  key: string;
  heapMb: number;
  resolve: (grant: Pooled | 'busy') => void;
  reject: (error: Error) => void;
  timer?: NodeJS.Timeout;
  settled?: boolean;
}

/**
 * Workers kept between jobs (each takes ~40 ms to start), and at most `max` at
 * once. A job holds a worker for one parse or render only; the other jobs wait
 * in a queue per key (a plugin), served round-robin between the keys. A key
 * that holds a worker gets another only while every other open key (a
 * validation in progress) that holds none still has one left for it: one
 * plugin's renders can delay another's by at most one render, not a queue of
 * them. A waiter leaves the queue when its validation's time runs out.
 */
class WorkerPool {
  /** Workers given to jobs (or starting for one). */
  private held = 0;
  private readonly idle: Pooled[] = [];
  /** The waiters of each key, the keys in round-robin order: a served key goes to the back. */
  private readonly queues = new Map<string, Waiter[]>();
  /** Workers held per key. */
  private readonly holding = new Map<string, number>();
  /** Validations in progress per key. */
  private readonly open = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly maxIdle: number,
  ) {}

  /** A validation of `key` began: the key is owed a worker from now on. */
  begin(key: string): void {
    this.open.set(key, (this.open.get(key) ?? 0) + 1);
  }

  /** A validation of `key` ended. */
  end(key: string): void {
    const left = (this.open.get(key) ?? 1) - 1;
    if (left > 0) this.open.set(key, left);
    else this.open.delete(key);
    this.dispatch();
  }

  /** A worker for one job of `key`; 'busy' when none came free before `deadline` (performance.now() ms; Infinity: none). */
  acquire(key: string, heapMb: number, deadline: number): Promise<Pooled | 'busy'> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { key, heapMb, resolve, reject };
      const queue = this.queues.get(key);
      if (queue) queue.push(waiter);
      else this.queues.set(key, [waiter]);
      this.dispatch();
      if (waiter.settled || !Number.isFinite(deadline)) return;
      waiter.timer = setTimeout(() => {
        if (waiter.settled) return;
        waiter.settled = true;
        const waiting = this.queues.get(key) ?? [];
        waiting.splice(waiting.indexOf(waiter), 1);
        if (!waiting.length) this.queues.delete(key);
        resolve('busy');
      }, Math.max(0, deadline - performance.now()));
    });
  }

  /** Gives a job's worker back: to the pool when it finished its job, terminated when it was stopped or failed (or never started). */
  release(key: string, pooled: Pooled | undefined, healthy: boolean): void {
    this.held--;
    const holds = (this.holding.get(key) ?? 1) - 1;
    if (holds > 0) this.holding.set(key, holds);
    else this.holding.delete(key);
    if (pooled) {
      if (healthy && this.idle.length < this.maxIdle) {
        pooled.worker.unref();
        this.idle.push(pooled);
      } else void pooled.worker.terminate();
    }
    this.dispatch();
  }

  private dispatch(): void {
    while (this.held < this.max) {
      const key = this.next();
      if (key === undefined) return;
      this.grant(key);
    }
  }

  /** The key whose first waiter is served next: the fewest workers held, then round-robin; undefined when none may be. */
  private next(): string | undefined {
    const free = this.max - this.held;
    const keys = new Set([...this.open.keys(), ...this.queues.keys()]);
    let without = 0;
    for (const key of keys) if (!this.holding.get(key)) without++;
    let best: string | undefined;
    let fewest = Infinity;
    for (const key of this.queues.keys()) {
      const holds = this.holding.get(key) ?? 0;
      // A key with a worker takes another only if one is still left for each other key without one.
      if (holds > 0 && free - 1 < without) continue;
      if (holds < fewest) {
        best = key;
        fewest = holds;
      }
    }
    return best;
  }

  private grant(key: string): void {
    const queue = this.queues.get(key)!;
    const waiter = queue.shift()!;
    this.queues.delete(key);
    if (queue.length) this.queues.set(key, queue);
    waiter.settled = true;
    clearTimeout(waiter.timer);
    this.held++;
    this.holding.set(key, (this.holding.get(key) ?? 0) + 1);
    const same = this.idle.findIndex((p) => p.heapMb === waiter.heapMb);
    if (same >= 0) {
      const [pooled] = this.idle.splice(same, 1);
      pooled!.worker.ref();
      waiter.resolve(pooled!);
      return;
    }
    // Workers of another heap size make room for this one.
    if (this.held + this.idle.length > this.max) void this.idle.shift()!.worker.terminate();
    spawn(waiter.heapMb).then(waiter.resolve, (error: Error) => {
      this.release(key, undefined, false);
      waiter.reject(error);
    });
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

/** At most this many templates are parsed or rendered at once (each worker may use up to heapMb); the other jobs wait for one. */
export const MAX_RENDER_WORKERS = Math.min(4, Math.max(2, availableParallelism() - 1));
const pool = new WorkerPool(MAX_RENDER_WORKERS, 2);

export interface SandboxOptions {
  /** Whose validation this is (a plugin): workers are shared fairly between keys. */
  key?: string;
  /**
   * The request's time budget (a server request's --query-timeout): when it ends
   * (performance.now() ms) and how long it is. Without one, a job waits for a worker as long as
   * it takes (the renders themselves are bounded).
   */
  budget?: { deadline: number; budgetMs: number };
}

/**
 * The template work of one validation: parse checks and renders, one at a
 * time, each on a worker of the pool held for that job only, within the
 * limits. `renderTimeMs` bounds one job and `requestTimeMs` all of them
 * together, each counting the time a job held its worker only: waiting for a
 * worker is never charged to the template. The request's budget bounds the
 * wait (RenderBudgetError). close() when done.
 */
export class TemplateSandbox {
  private readonly key: string;
  private readonly budget?: { deadline: number; budgetMs: number };
  /** Milliseconds the jobs of this validation held a worker so far (what `requestTimeMs` bounds). */
  private used = 0;
  private closed = false;
  private nextId = 0;
  /** Bytes of the parts rendered so far (`validationOutputBytes`). */
  private renderedBytes = 0;
  /** Set once `requestTimeMs` ran out: every later job answers with that limit at once. */
  budgetExceeded = false;
  /** Set once the rendered parts passed `validationOutputBytes`: every later render answers with that limit at once. */
  outputExceeded = false;

  constructor(
    readonly limits: RenderLimits,
    options: SandboxOptions = {},
  ) {
    this.key = options.key ?? '';
    if (options.budget) this.budget = options.budget;
    pool.begin(this.key);
  }

  async check(template: string): Promise<CheckOutcome> {
    const reply = await this.run({ op: 'check', template });
    if (reply.kind === 'ok') return { kind: 'ok' };
    if (reply.kind === 'limit') return limitOutcome(reply);
    if (reply.kind === 'fileAccess') return { kind: 'fileAccess', tag: reply.tag ?? 'include', ...(reply.line ? { line: reply.line } : {}) };
    return { kind: 'syntax', message: reply.message ?? 'the template cannot be parsed', ...(reply.line ? { line: reply.line } : {}) };
  }

  /** Renders a template with the variables it sees (a validation gives the request's `variables` and `contact`). */
  async render(template: string, variables: Record<string, unknown>): Promise<RenderOutcome> {
    if (this.outputExceeded) return { kind: 'limit', limit: 'validationOutputBytes' };
    const reply = await this.run({ op: 'render', template, variables });
    if (reply.kind === 'ok') {
      const output = reply.output ?? '';
      this.renderedBytes += typeof reply.bytes === 'number' ? reply.bytes : Buffer.byteLength(output);
      if (this.renderedBytes > this.limits.validationOutputBytes) {
        this.outputExceeded = true;
        return { kind: 'limit', limit: 'validationOutputBytes' };
      }
      return { kind: 'ok', output };
    }
    if (reply.kind === 'limit') return limitOutcome(reply);
    return { kind: 'error', message: reply.message ?? 'the template cannot be rendered', ...(reply.line ? { line: reply.line } : {}) };
  }

  /** The validation is over: its key is owed no worker any more. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    pool.end(this.key);
  }

  private async run(job: { op: 'check' | 'render'; template: string; variables?: Record<string, unknown> }): Promise<Reply> {
    const { limits, key, budget } = this;
    if (job.template.length > limits.templateChars) return { kind: 'limit', limit: 'templateChars' };
    if (this.budgetExceeded || this.used >= limits.requestTimeMs) return this.outOfBudget();
    if (budget && performance.now() >= budget.deadline) throw new RenderBudgetError(false, budget.budgetMs);
    // A worker that cannot start is the server's failure, not the template's: it throws.
    const pooled = await pool.acquire(key, limits.heapMb, budget?.deadline ?? Infinity);
    if (pooled === 'busy') throw new RenderBudgetError(true, budget!.budgetMs);
    const requestLeft = budget ? budget.deadline - performance.now() : Infinity;
    if (requestLeft <= 0) {
      pool.release(key, pooled, true);
      throw new RenderBudgetError(true, budget!.budgetMs);
    }
    // The job's own time: its render limit, what is left of the validation's, the request's budget.
    const ownLeft = limits.requestTimeMs - this.used;
    const wait = Math.min(limits.renderTimeMs + GRACE_MS, ownLeft, requestLeft);
    const id = ++this.nextId;
    const granted = pooled;
    const { worker } = granted;
    const began = performance.now();
    const reply = await new Promise<Reply>((resolve) => {
      let done = false;
      const finish = (reply: Reply, healthy: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        this.used += performance.now() - began;
        pool.release(key, granted, healthy);
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
        if (wait === requestLeft && requestLeft < Math.min(limits.renderTimeMs + GRACE_MS, ownLeft)) finish({ kind: 'requestBudget' }, false);
        else {
          if (wait < limits.renderTimeMs + GRACE_MS) this.budgetExceeded = true;
          finish({ kind: 'limit', limit: this.budgetExceeded ? 'requestTimeMs' : 'renderTimeMs' }, false);
        }
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
        // The variables hold something that cannot be copied to the worker.
        finish({ kind: 'error', message: `the data cannot be passed to the renderer: ${(error as Error).message}` }, true);
      }
    });
    if (reply.kind === 'requestBudget') throw new RenderBudgetError(false, budget!.budgetMs);
    return reply;
  }

  private outOfBudget(): Reply {
    this.budgetExceeded = true;
    return { kind: 'limit', limit: 'requestTimeMs' };
  }
}

function limitOutcome(reply: Reply): LimitOutcome {
  return { kind: 'limit', limit: reply.limit! };
}
