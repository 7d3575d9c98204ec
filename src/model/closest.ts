/** The known names nearest an unknown one: drill's ids, the parser's time zones. */

/** Levenshtein distance, for suggesting the closest known ids. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/**
 * How far a known name is from an unknown one, in any case: 0.5 where one contains the other, else
 * the edits between them; undefined where it is too far to suggest (more than half the unknown's length, at least 2).
 */
export function nearness(id: string, known: string): number | undefined {
  const [a, b] = [id.toLowerCase(), known.toLowerCase()];
  if (b.includes(a) || a.includes(b)) return 0.5;
  const most = Math.max(2, Math.ceil(id.length / 2));
  // The edits are at least the lengths' difference; and past MAX_EDITED characters a name is near
  // only by containment (the edits of two names cost the product of their lengths: a request of
  // long variable names held the main thread for seconds).
  if (Math.abs(a.length - b.length) > most || a.length > MAX_EDITED || b.length > MAX_EDITED) return undefined;
  const d = distance(a, b);
  return d <= most ? d : undefined;
}

/** The longest name whose edits to another are counted (nearness). */
const MAX_EDITED = 64;

/** The known ids closest to an unknown one (at most three, the nearest first). */
export function closest(id: string, known: string[]): string[] {
  return [...new Set(known)]
    .map((k) => ({ k, d: nearness(id, k) }))
    .filter((x): x is { k: string; d: number } => x.d !== undefined)
    .sort((x, y) => x.d - y.d || x.k.localeCompare(y.k))
    .slice(0, 3)
    .map(({ k }) => k);
}
