// backend 'auto''s GPU threshold, measured once per device (a module with webgpuMinFlops keeps
// its own). GPUs differ by orders of magnitude, and so does a software adapter, so the fixed
// DEFAULT_WEBGPU_MIN_FLOPS is only where it starts: a plain call whose FLOPs are within
// AUTO_THRESHOLD_WINDOW of the device's current threshold runs on the CPU executor route() chose
// (WASM or the pool) and on the GPU, each timed (wall time, as the caller sees it), and returns
// the result of where the threshold sent it (both are held to the same float64 reference, so
// either is a correct answer). Each such sample brackets the crossover: the CPU faster at f means
// it lies above f, the GPU faster below. The threshold moves to the geometric mean of the
// tightest bracket, or, while the samples all point one way, to twice (or half) the furthest of
// them; after AUTO_THRESHOLD_SAMPLES samples it stays. A sample includes whatever the call paid
// the first time (the kernel selection's measured runs on a hardware GPU): that errs towards the
// CPU, which is never wrong, only slower.
import { AUTO_THRESHOLD_SAMPLES, AUTO_THRESHOLD_WINDOW, DEFAULT_WEBGPU_MIN_FLOPS } from '../base/cost_model.js';

const states = new WeakMap();  // GPUDevice → { flops, measured, samples: [{ flops, cpuMs, gpuMs }] }

/** The threshold state of `device` (made at the default on first use). */
export function deviceThreshold(device) {
  let state = states.get(device);
  if (!state) states.set(device, (state = { flops: DEFAULT_WEBGPU_MIN_FLOPS, measured: false, samples: [] }));
  return state;
}

/** Whether a call of `flops` is to be sampled on `state`'s device. */
export const wantsSample = (state, flops) => !state.measured
  && flops >= state.flops / AUTO_THRESHOLD_WINDOW && flops <= state.flops * AUTO_THRESHOLD_WINDOW;

/** Adds a sample (the same call's times on the CPU and the GPU) and moves the threshold. */
export function recordSample(state, flops, cpuMs, gpuMs) {
  if (state.measured) return;
  state.samples.push({ flops, cpuMs, gpuMs });
  const cpuFaster = state.samples.filter((s) => s.cpuMs <= s.gpuMs).map((s) => s.flops);
  const gpuFaster = state.samples.filter((s) => s.cpuMs > s.gpuMs).map((s) => s.flops);
  const below = cpuFaster.length ? Math.max(...cpuFaster) : null;  // the crossover is above these
  const above = gpuFaster.length ? Math.min(...gpuFaster) : null;  // and below these
  if (above === null) state.flops = Math.max(state.flops, 2 * below);
  else if (below === null) state.flops = Math.min(state.flops, above / 2);
  else state.flops = Math.sqrt(below * above);  // (below > above: noise; between them still)
  state.measured = state.samples.length >= AUTO_THRESHOLD_SAMPLES;
}

/**
 * Runs a sampled call: runCpu() then runGpu(), each timed; records the sample when both ran and
 * gpuBusy() (whether GPU calls of the module are queued ahead of it, whose time would count as
 * its own: calls made together) said no as its run began. Resolves to { cpu, gpu, gpuError } (gpu
 * null and gpuError set when the GPU's run threw).
 */
export async function sampleBoth(device, flops, runCpu, runGpu, gpuBusy = () => false) {
  const t0 = performance.now();
  const cpu = await runCpu();
  const t1 = performance.now();
  const queued = gpuBusy();
  try {
    const gpu = await runGpu();
    if (!queued) recordSample(deviceThreshold(device), flops, t1 - t0, performance.now() - t1);
    return { cpu, gpu, gpuError: null };
  } catch (e) {
    return { cpu, gpu: null, gpuError: e };
  }
}

/**
 * A module's GPU threshold, from its GPU slot (dispatch.js: { executor, minFlops,
 * measureThreshold }): its device's where it measures and has its GPU, else its own minFlops.
 */
export const moduleThreshold = ({ executor, minFlops, measureThreshold }) => (measureThreshold && executor ? deviceThreshold(executor.device).flops : minFlops);

/**
 * gpuProfile()'s autoThreshold for a module's GPU slot (with its GPU): { flops, measured, samples
 * (a copy: [{ flops, cpuMs, gpuMs }]) }; a module with a threshold of its own (webgpuMinFlops,
 * backend 'webgpu') reports it, measured false, with no samples.
 */
export function thresholdReport({ executor, minFlops, measureThreshold }) {
  if (!measureThreshold) return { flops: minFlops, measured: false, samples: [] };
  const { flops, measured, samples } = deviceThreshold(executor.device);
  return { flops, measured, samples: samples.map((s) => ({ ...s })) };
}
