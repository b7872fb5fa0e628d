// The one timing loop of the A/B benchmarks (bench/ab/versions_ab.mjs, bench/ab/modules_ab.mjs): every
// round times each contender once, in an order that rotates from round to round (with two, A B
// then B A), so that a slow spell of the machine, and the place in a round (the second of a pair
// pays a small bias), hit them all alike. Ratios are taken within a round, then their median.

export const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * runs: one () => Promise<ms> per contender. Resolves to ms[k][round] over `rounds` rounds, after
 * `warmupRounds` rounds (same rotation) whose times are dropped.
 */
export async function interleavedRounds(runs, rounds, warmupRounds = 0) {
  const ms = runs.map(() => []);
  for (let r = 0; r < warmupRounds + rounds; r++) {
    for (let i = 0; i < runs.length; i++) {
      const k = (i + r) % runs.length;
      const t = await runs[k]();
      if (r >= warmupRounds) ms[k].push(t);
    }
  }
  return ms;
}

/** The median over rounds of a[r] / b[r] (two contenders' ms from interleavedRounds). */
export const roundRatio = (a, b) => median(a.map((t, r) => t / b[r]));
