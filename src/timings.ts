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

/**
 * One step as printed: its label, how deep it runs in other steps, its wall time in all and how many
 * times it ran; running: it had not ended when the list was made (a command stopped by a signal).
 */
export interface Step {
  label: string;
  depth: number;
  ms: number;
  count: number;
  running?: boolean;
}

/**
 * A step as recorded: its key (the labels of the steps it runs in, then its own), the steps run in
 * it, and its runs not ended yet: how many, and the sum of their start times (their time so far,
 * at now, is open * now - openSince).
 */
interface Node extends Step {
  key: string;
  children: Node[];
  open: number;
  openSince: number;
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
      node = { key, label, depth: parent ? parent.depth + 1 : 0, ms: 0, count: 0, children: [], open: 0, openSince: 0 };
      this.nodes.set(key, node);
      (parent ? parent.children : this.roots).push(node);
    }
    return node;
  }

  /** Every step, each followed by the steps run in it (depth first); with now, a step still running counts its time so far, and says so. */
  list(now?: number): Step[] {
    const out: Step[] = [];
    const walk = (nodes: Node[]) => {
      for (const { label, depth, ms, count, children, open, openSince } of nodes) {
        out.push(now === undefined || open === 0 ? { label, depth, ms, count } : { label, depth, ms: ms + open * now - openSince, count: count + open, running: true });
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
  step.open += 1;
  step.openSince += started;
  try {
    return await running.run({ timings: outer.timings, step }, work);
  } finally {
    step.open -= 1;
    step.openSince -= started;
    step.ms += performance.now() - started;
    step.count += 1;
  }
}

/**
 * The timings as printed on stderr: a heading, then one line per step, indented by its depth, its
 * milliseconds right-aligned (and "(N times)" for a step that ran N times, "(running)" for one not ended); `before`, the process's time
 * before the command started (Node's start and convx's modules), and `total`, the process's time
 * at the end, when known.
 */
export function formatTimings(steps: readonly Step[], clock: { before?: number; total?: number } = {}): string {
  const rows: Step[] = [
    ...(clock.before === undefined ? [] : [{ label: 'start (Node, convx\u2019s modules)', depth: 0, ms: clock.before, count: 1 }]),
    ...steps,
    ...(clock.total === undefined ? [] : [{ label: 'total', depth: 0, ms: clock.total, count: 1 }]),
  ];
  const labelOf = (s: Step) => `${'  '.repeat(s.depth)}${s.label}`;
  const width = Math.max(0, ...rows.map((s) => labelOf(s).length));
  const digits = Math.max(0, ...rows.map((s) => Math.round(s.ms).toString().length));
  const notes = (s: Step) => [s.count > 1 ? `${s.count} times` : '', s.running ? 'running' : ''].filter(Boolean).join(', ');
  const lines = rows.map((s) => `  ${labelOf(s).padEnd(width)}  ${Math.round(s.ms).toString().padStart(digits)} ms${notes(s) ? ` (${notes(s)})` : ''}`);
  return `timings (CONVX_TIMINGS), wall time; a step includes the steps indented under it, and steps run at once overlap:\n${lines.join('\n')}\n`;
}
