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

/** The known ids closest to an unknown one (at most three, the nearest first). */
export function closest(id: string, known: string[]): string[] {
  const lower = id.toLowerCase();
  return [...new Set(known)]
    .map((k) => ({ k, d: k.toLowerCase().includes(lower) || lower.includes(k.toLowerCase()) ? 0.5 : distance(lower, k.toLowerCase()) }))
    .filter(({ d }) => d <= Math.max(2, Math.ceil(id.length / 2)))
    .sort((x, y) => x.d - y.d || x.k.localeCompare(y.k))
    .slice(0, 3)
    .map(({ k }) => k);
}
