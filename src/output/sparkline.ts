/**
 * Sparklines, pure: a row of numbers in, a word of eighth blocks out (▁▂▃▄▅▆▇█), for a
 * table's trend column. The scale runs from 0 to the largest value: nothing (0, or a
 * negative value) is the lowest block, the largest the full block, and any value above
 * nothing at least the second block, so a day with some revenue never looks like a day
 * without any. An all-zero row is a row of the lowest block.
 */

/** The lower eighth blocks, one eighth to eight eighths of a cell. */
export const EIGHTHS = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'] as const;

/** A value a picture can draw: non-finite numbers (NaN, ±Infinity) count as 0. */
export const drawable = (value: number): number => (Number.isFinite(value) ? value : 0);

/**
 * The values in `width` columns when there are more of them: column j is the MEAN of the
 * consecutive values floor(j*n/width) .. floor((j+1)*n/width)-1 (every value counts once,
 * groups differ by one value at most, and a mean keeps a column on the scale of one value:
 * a group of fewer values is not drawn shorter for it). As they are when they fit.
 */
export function squeeze(values: readonly number[], width: number): number[] {
  const n = values.length;
  if (n <= width) return values.map(drawable);
  const out: number[] = [];
  for (let j = 0; j < width; j++) {
    const from = Math.floor((j * n) / width);
    const to = Math.floor(((j + 1) * n) / width);
    let sum = 0;
    for (let i = from; i < to; i++) sum += drawable(values[i]!);
    out.push(sum / (to - from));
  }
  return out;
}

/** The first value of each column of squeeze(values, width): where a column's group begins. */
export function squeezeStarts(n: number, width: number): number[] {
  if (n <= width) return Array.from({ length: n }, (_, i) => i);
  return Array.from({ length: width }, (_, j) => Math.floor((j * n) / width));
}

/**
 * One block per value (`width` omitted), or the values squeezed into `width` blocks by
 * averaging (see squeeze); fewer values than `width` are never stretched.
 */
export function sparkline(values: readonly number[], width?: number): string {
  const columns = squeeze(values, width === undefined ? values.length : Math.max(0, Math.floor(width)));
  const max = columns.reduce((m, v) => Math.max(m, v), 0);
  return columns.map((v) => EIGHTHS[v <= 0 || max === 0 ? 0 : Math.max(1, Math.round((v / max) * 7))]).join('');
}
