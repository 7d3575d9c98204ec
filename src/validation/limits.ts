/**
 * The bounds of template work in a delivery validation (docs/server.md, its limits):
 * time, work and output size, each an option of `convx validate` and
 * `convx serve` with a default.
 */
import { UsageError } from '../errors.js';

export interface RenderLimits {
  /** Milliseconds one template part may take to parse or render (liquidjs renderLimit; the renderer is stopped shortly after). */
  renderTimeMs: number;
  /**
   * Milliseconds the template checks and renders of one validation may take together,
   * each counted while it runs on a renderer: waiting for a renderer is not counted (a
   * server bounds the wait by the request's time budget, --query-timeout: a 503, never a finding).
   */
  requestTimeMs: number;
  /** Characters of one template part (liquidjs parseLimit). */
  templateChars: number;
  /** Allocations one render may make, as liquidjs counts them: characters of strings built, array elements (memoryLimit). */
  renderMemory: number;
  /** Bytes (UTF-8) of one rendered part. */
  outputBytes: number;
  /** Bytes (UTF-8) of all parts rendered in one validation together; past it no more samples are rendered. */
  validationOutputBytes: number;
  /** Megabytes of heap of the renderer (a worker thread); above it the render is stopped. */
  heapMb: number;
}

export type RenderLimitName = keyof RenderLimits;

export const DEFAULT_RENDER_LIMITS: Readonly<RenderLimits> = Object.freeze({
  renderTimeMs: 1_000,
  requestTimeMs: 5_000,
  templateChars: 1_000_000,
  renderMemory: 10_000_000,
  outputBytes: 1_048_576,
  validationOutputBytes: 16_777_216,
  heapMb: 256,
});

/** The limit flags as commander gives them (camelCase keys, text values). */
export interface RenderLimitFlags {
  renderTimeLimit?: string;
  validationTimeLimit?: string;
  templateSizeLimit?: string;
  renderMemoryLimit?: string;
  renderOutputLimit?: string;
  validationOutputLimit?: string;
  renderHeapLimit?: string;
}

/** A limit as a flag sets it (commands/options.ts makes the flags of `convx validate` and `convx serve` from these). */
export interface LimitFlag {
  name: RenderLimitName;
  key: keyof RenderLimitFlags;
  /** The flag without dashes, e.g. "render-time-limit". */
  flag: string;
  unit: string;
  description: string;
  /** The smallest value that works (a worker needs some heap to start at all). */
  min?: number;
}

export const LIMIT_FLAGS: readonly LimitFlag[] = [
  { name: 'renderTimeMs', key: 'renderTimeLimit', flag: 'render-time-limit', unit: 'ms', description: 'time one template part may take to parse or render' },
  {
    name: 'requestTimeMs',
    key: 'validationTimeLimit',
    flag: 'validation-time-limit',
    unit: 'ms',
    description: 'time the template checks and renders of one validation may take together (waiting for a renderer is not counted)',
  },
  { name: 'templateChars', key: 'templateSizeLimit', flag: 'template-size-limit', unit: 'characters', description: 'size of one template part' },
  {
    name: 'renderMemory',
    key: 'renderMemoryLimit',
    flag: 'render-memory-limit',
    unit: 'allocations',
    description: 'characters and array elements one render may allocate (liquidjs memoryLimit)',
  },
  { name: 'outputBytes', key: 'renderOutputLimit', flag: 'render-output-limit', unit: 'bytes', description: 'size of one rendered part' },
  {
    name: 'validationOutputBytes',
    key: 'validationOutputLimit',
    flag: 'validation-output-limit',
    unit: 'bytes',
    description: 'size of all parts rendered in one validation together; past it no more samples are rendered',
  },
  { name: 'heapMb', key: 'renderHeapLimit', flag: 'render-heap-limit', unit: 'MB', description: 'heap of the template renderer (a worker thread)', min: 16 },
];

/** The flag that sets a limit, e.g. "--render-time-limit", for messages. */
export function limitFlag(name: RenderLimitName): string {
  return `--${LIMIT_FLAGS.find((f) => f.name === name)!.flag}`;
}

/** A limit's value with its unit, e.g. "1000 ms". */
export function limitValue(limits: RenderLimits, name: RenderLimitName): string {
  return `${limits[name]} ${LIMIT_FLAGS.find((f) => f.name === name)!.unit}`;
}

/** The first limit flag given, e.g. "--render-time-limit"; undefined when none is. */
export function givenRenderLimitFlag(flags: RenderLimitFlags): string | undefined {
  const given = LIMIT_FLAGS.find((f) => flags[f.key] !== undefined);
  return given && `--${given.flag}`;
}

/** The limits the flags set, the defaults for the others; a value that is not a positive whole number is a UsageError. */
export function renderLimitsFromFlags(flags: RenderLimitFlags): RenderLimits {
  const limits: RenderLimits = { ...DEFAULT_RENDER_LIMITS };
  for (const f of LIMIT_FLAGS) {
    const value = flags[f.key];
    if (value === undefined) continue;
    if (!/^\d+$/.test(value) || Number(value) === 0 || !Number.isSafeInteger(Number(value))) {
      throw new UsageError(`--${f.flag}: "${value}" is not a positive whole number of ${f.unit}`);
    }
    if (f.min !== undefined && Number(value) < f.min) throw new UsageError(`--${f.flag}: at least ${f.min} ${f.unit}`);
    limits[f.name] = Number(value);
  }
  return limits;
}

/** Fills in the defaults; the validation code takes complete limits. */
export function resolveRenderLimits(limits: Partial<RenderLimits> = {}): RenderLimits {
  return { ...DEFAULT_RENDER_LIMITS, ...limits };
}
