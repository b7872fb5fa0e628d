// Checks and timing of what a forward pass returns.

const WARM_RUNS = 20;       // timing samples, unless they would take longer than:
const WARM_BUDGET_MS = 2000;
const MIN_SAMPLE_MS = 2;    // browsers round performance.now() to 0.1 ms: time batches of small calls

/** max |Σ_j w_ij − 1| over all rows of a [..., L, S] weight tensor. */
export function rowSumError(w, S) {
  let worst = 0;
  for (let r = 0; r < w.length / S; r++) {
    let s = 0;
    for (let j = 0; j < S; j++) s += w[r * S + j];
    worst = Math.max(worst, Math.abs(s - 1));
  }
  return worst;
}

/** For one [L, L] matrix at `offset`: argmax of each row, rows peaking on the diagonal, and
 *  pairs with α_ij > max(α_ii, α_jj): the weight-level inequality, which docs/attention-math/basics.md §2
 *  shows for equal-norm tokens (what the demo feeds in), not in general. */
export function diagonalStats(w, L, offset = 0) {
  const at = (i, j) => w[offset + i * L + j];
  const argmax = new Int32Array(L);
  let onDiagonal = 0;
  let violations = 0;
  for (let i = 0; i < L; i++) {
    for (let j = 1; j < L; j++) if (at(i, j) > at(i, argmax[i])) argmax[i] = j;
    if (at(i, argmax[i]) <= at(i, i)) onDiagonal++;  // ties count for the diagonal
    for (let j = 0; j < L; j++) {
      if (j !== i && at(i, j) > Math.max(at(i, i), at(j, j)) + 1e-6) violations++;
    }
  }
  return { argmax, onDiagonal, violations };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Median time of one call: up to WARM_RUNS samples (fewer past WARM_BUDGET_MS, at least 3),
 *  each a batch of calls long enough for the coarse browser timer. */
export async function timeWarm(call) {
  await call();  // one untimed warm-up call
  let batch = 1;
  let elapsed;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < batch; i++) await call();
    elapsed = performance.now() - t0;
    if (elapsed >= MIN_SAMPLE_MS || batch >= 4096) break;
    batch *= 2;
  }
  const times = batch === 1 ? [elapsed] : [];  // a slow call's calibration run is a sample too
  const start = performance.now();
  while (times.length < WARM_RUNS && (times.length < 3 || performance.now() - start < WARM_BUDGET_MS)) {
    const t0 = performance.now();
    for (let i = 0; i < batch; i++) await call();
    times.push((performance.now() - t0) / batch);
  }
  return { ms: median(times), samples: times.length, batch };
}
