// What a first create(), loadStateDict() and forward() never run: the package's GGUF reader, the
// safetensors reader and writer and the checkpoint configs' mappings (fromConfig(), fromGguf(),
// attentionOptionsFromConfig()), and, for the layers below (base/lazy_modules.js reaches them),
// quantised-tensor loading, checkpoint namings other than PyTorch's, the GPU-tensor checks,
// forward() on GPU inputs, encode() (cross-attention) and KvCache.keep()'s checks. The browser entry imports this file as any other (one chunk for a bundler); the bundled
// Node entry loads it on first use instead (node.js lazyExports()): the ~66 KB of its bundle
// (web/dist/lazy_exports.js) were a third of what every cold start's import parsed
// (docs/performance/memory_and_startup.md#cold-start).
export { loadGguf } from './storage/gguf.js';
export { loadSafetensors } from './storage/safetensors.js';
export { saveSafetensors } from './storage/safetensors_writer.js';
export { FROM_CONFIG_OPTIONS, attentionOptionsFromConfig } from './checks/hf_config.js';
export { FROM_GGUF_OPTIONS, attentionOptionsFromGguf } from './checks/gguf_config.js';
// Internals, reached through base/lazy_modules.js's lazyModules().
export { quantisedEntry, quantisedRows, stackQuantised } from './storage/quantised_tensors.js';
export { checkGpuOut, checkGpuTensor } from './checks/gpu_tensor_checks.js';
export { forwardOnDevice } from './dispatch/device_calls.js';
export { encodeStorage } from './dispatch/encode_call.js';
export { checkKeep } from './dispatch/keep_checks.js';
export { resolveLayout } from './storage/layout_resolution.js';
export { resolveEncode, resolveEncodedForward } from './checks/encode_plans.js';
