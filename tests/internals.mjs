// Every package internal the tests use (thresholds, FLOP counts, test hooks), re-exported from
// where it lives today: when web/src moves things, this file is the one test file that changes.
// Tests import the public API from '#webattention' (package.json "imports": web/src/node.js, the
// source, where users get its bundle web/dist/node.js; web/src/browser.js in pages), and
// everything else from here. Environment-free, like the modules it re-exports: pages load it too.
import { forwardFlops } from '../web/src/base/cost_model.js';
import { resolveMhaConfig } from '../web/src/checks/module_config.js';
import { resolveMhaForward } from '../web/src/checks/plans.js';
import { asFloat32, f32BitsToF16, roundToHalf } from '../web/src/storage/half_floats.js';

export { asFloat32, f32BitsToF16, forwardFlops, resolveMhaConfig, resolveMhaForward, roundToHalf };
export { CREATE_OPTIONS, coreConfig } from '../web/src/checks/module_config.js';
export { MAX_CACHE_POSITIONS, ringGeometry } from '../web/src/storage/kv_ring.js';
export { AUTO_MIN_FLOPS, DEFAULT_WEBGPU_MIN_FLOPS } from '../web/src/base/cost_model.js';
export { testHooks as webgpuTestHooks } from '../web/src/dispatch/dispatch.js';
export { DECODE_MAX_L } from '../web/src/webgpu/selection/kernel_config.js';
export { testHooks as poolTestHooks } from '../web/src/pool/pool.js';
export { chooseVariant, pickVariant, relaxedSimdSupported, simdSupported } from '../web/src/wasm/variant.js';
export {
  DOT_MIN_SPEEDUP, FUSED_MIN_WITH_DOT, RELAXED_MIN_SPEEDUP, isPlausible, measureRelaxedSpeedups, measuredSpeedups, relaxedPays,
} from '../web/src/wasm/madd_probe.js';
export { MADD_PROBE } from '../web/dist/madd_probe.js';
export { acquireGpu, isSoftwareAdapter } from '../web/src/webgpu/device.js';
export { pipelineCount } from '../web/src/webgpu/pipelines.js';
export { passHooks } from '../web/src/webgpu/forward_pass.js';
export { STEP_KEYS } from '../web/src/webgpu/step_bound.js';
export { SMALL_TENSOR_BYTES } from '../web/src/webgpu/encoding_context.js';
export { cacheHooks } from '../web/src/webgpu/webgpu_executor.js';
export { heapHooks } from '../web/src/wasm/heap_calls.js';
export { CoreMha } from '../web/src/wasm/core_binding.js';
export { selectionHooks, selectionProfile } from '../web/src/webgpu/selection/kernel_selection.js';
export { DEFAULT_VARIANTS, SELECTION_RUNS } from '../web/src/webgpu/selection/kernel_config.js';
export { parameterBufferBytes, parameterWrites, scaleOffsets } from '../web/src/webgpu/weight_storage.js';
export { parameterLayout } from '../web/src/storage/parameter_layout.js';
export { MASK_SENTINEL } from '../web/src/webgpu/kernels/attention_common.wgsl.js';
export { quantizeQ8 } from '../web/src/storage/q8_0.js';
export { Usage } from '../web/src/webgpu/device.js';
export { packParams } from '../web/src/webgpu/kernel_params.js';
export { APPEND_PARAMS, cacheAppendGrid, cacheAppendShader } from '../web/src/webgpu/kernels/cache_append.wgsl.js';
export { cacheHeadWords } from '../web/src/webgpu/kernels/cache_narrow.wgsl.js';
export { WIDEN_HALF_PARAMS, narrowHalfShader, widenHalfGrid, widenHalfShader } from '../web/src/webgpu/kernels/widen_half.wgsl.js';

/** The fixture cases a WebGPU module runs: every 'mha' case. */
export const webgpuCases = (cases) => cases.filter((c) => c.kind === 'mha');

/** FLOPs of one forward() of a decoded 'mha' fixture case (the package's own count). */
export function caseFlops(c) {
  const config = resolveMhaConfig(c.create);
  const { query, key, value } = c.inputs;
  return forwardFlops(resolveMhaForward(config, query, key, value, c.options), config);
}

/**
 * A case's state dict with its weight matrices as 16-bit tensors of `dtype` (rounded as a module of
 * that weightsDtype rounds them), tagged `tag` (a spelling the API takes: 'F16', 'float16', …);
 * vectors (biases, sinks) stay float32, as a module keeps them and as the case's expected values
 * were computed. The WASM and WebGPU storage tests both feed their modules through it.
 */
export const halfStateDict = (stateDict, dtype, tag = dtype) => Object.fromEntries(Object.entries(stateDict).map(([name, t]) =>
  [name, t.shape.length !== 2 ? t : { data: roundToHalf(dtype, t.data), shape: t.shape, dtype: tag }]));
export { WasmExecutor } from '../web/src/wasm/wasm_executor.js';
export { resolveModuleStateDict } from '../web/src/storage/state_dict.js';
export { MAX_ENGINES, engineHooks } from '../web/src/api/attention_engines.js';
