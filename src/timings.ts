/**
 * Where a command's time goes, when CONVX_TIMINGS asks (docs/configuration.md): the steps a
 * command's code marks with `timed` (reading the files, each check, each relation of the
 * attribution, the query, the output) record their wall time into the Timings of the command
 * running, which cli.ts's run() makes and prints to stderr when the command ends. Without it,
 * `timed` runs its work and records nothing.
 *
 * The command's Timings travel with its asynchronous work (AsyncLocalStorage), so that code deep
 * in local/ marks a step without a parameter through every call, and a step knows the step it
 * runs in: a step's time includes the steps run inside it, printed indented under it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** One step as printed: its label, how deep it runs in other steps, its wall time in all and how many times it ran. */
export interface Step {
  label: string;
  depth: number;
  ms: number;
  count: number;
}

/** The steps of one command, in the order each first started. */
export class Timings {
  private readonly steps = new Map<string, Step>();

  /** Adds ms to the step of this label at this depth (made the first time it starts, so that the order is the start order). */
  start(label: string, depth: number): Step {
    const key = `${depth}\u0000${label}`;
    let step = this.steps.get(key);
    if (!step) {
      step = { label, depth, ms: 0, count: 0 };
      this.steps.set(key, step);
    }
    return step;
  }

  list(): Step[] {
    return [...this.steps.values()].map((step) => ({ ...step }));
  }
}

const running = new AsyncLocalStorage<{ timings: Timings; depth: number }>();

/** True where the environment asks for the timings (CONVX_TIMINGS set to anything but "", "0" or "false"). */
export function timingsAsked(env: Record<string, string | undefined>): boolean {
  const value = env.CONVX_TIMINGS?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}

/** Runs work with timings as the steps' record (none: nothing is recorded). */
export function withTimings<T>(timings: Timings | undefined, work: () => Promise<T>): Promise<T> {
  return timings ? running.run({ timings, depth: 0 }, work) : work();
}

/** Runs a step of work: its wall time is added to the label's, under the step it runs in, when timings are asked. */
export async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const outer = running.getStore();
  if (!outer) return work();
  const step = outer.timings.start(label, outer.depth);
  const started = performance.now();
  try {
    return await running.run({ timings: outer.timings, depth: outer.depth + 1 }, work);
  } finally {
    step.ms += performance.now() - started;
    step.count += 1;
  }
}

/**
 * The timings as printed on stderr: a heading, then one line per step, indented by its depth, its
 * milliseconds right-aligned (and "×N" for a step that ran N times); `before`, the process's time
 * before the command started (Node's start and convx's modules), and `total`, the process's time
 * at the end, when known.
 */
export function formatTimings(steps: readonly Step[], clock: { before?: number; total?: number } = {}): string {
  const rows: [string, number, number][] = [
    ...(clock.before === undefined ? [] : [['start (Node, convx\u2019s modules)', clock.before, 1] as [string, number, number]]),
    ...steps.map((s) => [`${'  '.repeat(s.depth)}${s.label}`, s.ms, s.count] as [string, number, number]),
    ...(clock.total === undefined ? [] : [['total', clock.total, 1] as [string, number, number]]),
  ];
  const width = Math.max(0, ...rows.map(([label]) => label.length));
  const digits = Math.max(0, ...rows.map(([, ms]) => Math.round(ms).toString().length));
  const lines = rows.map(([label, ms, count]) => `  ${label.padEnd(width)}  ${Math.round(ms).toString().padStart(digits)} ms${count > 1 ? ` (${count} times)` : ''}`);
  return `timings (CONVX_TIMINGS), wall time; a step includes the steps indented under it, and steps run at once overlap:\n${lines.join('\n')}\n`;
}
