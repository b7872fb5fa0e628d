// The package's typed errors (web/index.d.ts re-exports them): each names the offending argument,
// what was expected and what was given.

export class WebAttentionError extends Error {
  /** The offending argument ("query", "attnMask", "in_proj_weight", ...). */
  readonly argument?: string;
  readonly expected?: unknown;
  readonly actual?: unknown;
}
export class ShapeError extends WebAttentionError {}
export class DTypeError extends WebAttentionError {}
export class StateDictError extends WebAttentionError {}
export class OptionError extends WebAttentionError {}
export class DisposedError extends WebAttentionError {}
export class MemoryError extends WebAttentionError {}
/** A KV cache appended past its maxLength, or used with a module other than its own. */
export class CacheError extends WebAttentionError {}
/** A worker of a module's thread pool crashed, exited or could not start. */
export class WorkerError extends WebAttentionError {}
/** backend 'webgpu' where there is no WebGPU, no adapter or no device. */
export class BackendError extends WebAttentionError {}
/** A .safetensors file that breaks the format (loadSafetensors()); `argument` names the part. */
export class SafetensorsError extends WebAttentionError {}
/** A GGUF file that breaks the format, or a tensor type loadGguf() cannot return; `argument` names the part. */
export class GgufError extends WebAttentionError {}
/**
 * A file of the package could not be fetched or is not what it should be (HTML served instead
 * of the .wasm: Vite's dev server without optimizeDeps.exclude); the message names the URL and
 * the fix (optimizeDeps.exclude, the URL, configure({ wasmPaths })).
 */
export class LoadError extends WebAttentionError {}
