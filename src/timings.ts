/**
 * Where a command's time goes, when CONVX_TIMINGS asks (docs/configuration.md): the steps a
 * command's code marks with `timed` (reading the files, each check, each relation of the
 * attribution, the query, the output) record their wall time into the Timings of the command
 * running, which cli.ts's run() makes and prints to stderr when the command ends. Without it,
 * `timed` runs its work and records nothing.
 *
 * The command's Timings travel with its asynchronous work (AsyncLocalStorage), so that code deep
 * in local/ marks a step without a parameter through every call, and a step knows the step it
 * runs in: a step's time includes the steps run inside it, printed indented under it (a label
 * under two steps is two steps).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** One step as printed: its label, how deep it runs in other steps, its wall time in all and how many times it ran. */
export interface Step {
  label: string;
  depth: number;
  ms: number;
  count: number;
}

/** A step as recorded: its key (the labels of the steps it runs in, then its own) and the steps run in it. */
interface Node extends Step {
  key: string;
  children: Node[];
}

/** The steps of one command, each under the step it ran in, in the order each first started there. */
export class Timings {
  private readonly roots: Node[] = [];
  private readonly nodes = new Map<string, Node>();

  /** The step of this label under `parent` (none: at the top), made the first time it starts there. */
  start(label: string, parent: Node | undefined): Node {
    const key = parent ? `${parent.key}\u0000${label}` : label;
    let node = this.nodes.get(key);
    if (!node) {
      node = { key, label, depth: parent ? parent.depth + 1 : 0, ms: 0, count: 0, children: [] };
      this.nodes.set(key, node);
      (parent ? parent.children : this.roots).push(node);
    }
    return node;
  }

  /** Every step, each followed by the steps run in it (depth first). */
  list(): Step[] {
    const out: Step[] = [];
    const walk = (nodes: Node[]) => {
      for (const { label, depth, ms, count, children } of nodes) {
        out.push({ label, depth, ms, count });
        walk(children);
      }
    };
    walk(this.roots);
    return out;
  }
}

const running = new AsyncLocalStorage<{ timings: Timings; step?: Node }>();

/** True where the environment asks for the timings (CONVX_TIMINGS set to anything but "", "0" or "false"). */
export function timingsAsked(env: Record<string, string | undefined>): boolean {
  const value = env.CONVX_TIMINGS?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}

/** Runs work with timings as the record of the steps it marks. */
export function withTimings<T>(timings: Timings, work: () => Promise<T>): Promise<T> {
  return running.run({ timings }, work);
}

/** Runs a step of work: its wall time is added to the label's, under the step it runs in, when timings are asked. */
export async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const outer = running.getStore();
  if (!outer) return work();
  const step = outer.timings.start(label, outer.step);
  const started = performance.now();
  try {
    return await running.run({ timings: outer.timings, step }, work);
  } finally {
    step.ms += performance.now() - started;
    step.count += 1;
  }
}

/**
 * The timings as printed on stderr: a heading, then one line per step, indented by its depth, its
 * milliseconds right-aligned (and "(N times)" for a step that ran N times); `before`, the process's time
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
