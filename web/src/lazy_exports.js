// What the package exports that a first create(), loadStateDict() and forward() never run: the
// GGUF reader, the safetensors writer and the checkpoint configs' mappings (fromConfig(),
// fromGguf(), attentionOptionsFromConfig()). The browser entry imports this file as any other
// (one chunk for a bundler); the bundled Node entry loads it on first use instead
// (node.js lazyExports()): its ~40 KB were a fifth of what every cold start's import parsed
// (docs/performance.md#cold-start).
export { loadGguf } from './storage/gguf.js';
export { saveSafetensors } from './storage/safetensors_writer.js';
export { FROM_CONFIG_OPTIONS, attentionOptionsFromConfig } from './checks/hf_config.js';
export { FROM_GGUF_OPTIONS, attentionOptionsFromGguf } from './checks/gguf_config.js';
