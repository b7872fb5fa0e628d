// The error classes the package entries (node.js, browser.js) export: the public ones only, not
// errors.js's helpers (message formatting, the core's error strings), which are internal.
export {
  WebAttentionError, ShapeError, DTypeError, StateDictError, OptionError, DisposedError, MemoryError, CacheError,
  WorkerError, BackendError, LoadError, SafetensorsError, GgufError,
} from '../base/errors.js';
