// The cost model: forwardFlops(), the work of a forward() call, and every threshold in its units
// that decides where a call runs or how long it may take. The router (dispatch.js) and the
// executors (the pool's output split, its workers' answer budgets; the GPU acquisition's default
// threshold and how 'auto' measures its own) read them here.
import { isAttentionOnly } from './attention_only.js';

/**
 * threads 'auto': a call under this many FLOPs stays on the calling thread. A worker round trip
 * costs about 120 µs (Node 20, 2 cores), so below ~10 MFLOP (~0.4 ms on one thread) the pool is
 * slower; at 25 MFLOP it is 1.3× faster.
 */
export const AUTO_MIN_FLOPS = 16e6;

/**
 * How long a pool worker may take to answer a request before it counts as hung: then the pool
 * stops with a WorkerError and its modules carry on on the calling thread. Generous on purpose:
 * 10 s plus the work at 0.1 GFLOP/s (a hundredth of the speed measured in docs/performance/prefill.md#prefill);
 * requests without work (start, weights, memory) get the 10 s alone. Measured from when the
 * request reaches the head of the worker's queue (a worker answers in order).
 */
export const workerAnswerMs = (flops = 0) => 10_000 + flops / 1e5;

/**
 * Output projections (after head-range tasks) of at least this many FLOPs are split by rows over
 * the workers too: one more round trip, paid for above ~10 MFLOP.
 */
export const SPLIT_PROJECTION_FLOPS = 16e6;

/**
 * backend 'auto': the FLOPs from which a call goes to a hardware GPU. 2^26 ≈ 67 MFLOP is about
 * 2 ms of single-threaded WASM at the 27–32 GFLOP/s in docs/performance/prefill.md#prefill (≈ 1.3 ms on the pool);
 * below that, the 0.7–0.9 ms fixed cost of a GPU round trip (upload, dispatches, readback) leaves
 * a GPU little to win. docs/webgpu.md says how to measure it for a given GPU (webgpuMinFlops
 * overrides it). A software adapter (SwiftShader) is never used by 'auto' unless webgpuMinFlops
 * is given.
 */
export const DEFAULT_WEBGPU_MIN_FLOPS = 2 ** 26;

/**
 * backend 'auto' without webgpuMinFlops measures its threshold once per device
 * (dispatch/auto_threshold.js), starting from DEFAULT_WEBGPU_MIN_FLOPS: a plain call within this
 * factor of the current threshold runs on both the CPU and the GPU, timed, until
 * AUTO_THRESHOLD_SAMPLES such calls have moved it to where the device's crossover is.
 */
export const AUTO_THRESHOLD_WINDOW = 4;
export const AUTO_THRESHOLD_SAMPLES = 6;

/**
 * Work of one MHA forward in FLOPs (multiply-adds ×2): the four projections, the scores and the
 * weighted sum, plus the scores again when weights are asked for (every backend recomputes them
 * in a second pass).
 */
export function forwardFlops(plan, config) {
  const { B, L, S } = plan;
  const { embedDim: E, kdim, vdim, numHeads: H, headDim: dk, valueHeadDim: dv } = config;
  const G = config.numKvHeads ?? H;
  const T = plan.T ?? S;  // keys attended: with a cache, every cached position
  const projections = isAttentionOnly(config) ? 0 : L * E * H * dk + S * kdim * G * dk + S * vdim * G * dv + L * H * dv * E;
  const attention = H * L * T * (dk + dv) + (plan.needWeights ? H * L * T * dk : 0);
  return 2 * B * (projections + attention);
}
