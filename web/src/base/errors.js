// Typed errors. Every message names the argument, what was expected and what was given; the
// same fields are on the error object for programs that branch on them.
import { typedArrayLength, typedArrayType } from './typed_arrays.js';

export class WebAttentionError extends Error {
  // Spelled out: bundlers rename classes when they minify, so new.target.name could read 'Ce'.
  static errorName = 'WebAttentionError';

  constructor(message, { argument, expected, actual } = {}) {
    super(message);
    this.name = new.target.errorName;
    this.argument = argument;
    this.expected = expected;
    this.actual = actual;
  }
}

// Every class by its name, for errorFromData(): each kind is registered where it is defined.
const classes = { WebAttentionError };

/** A kind of WebAttentionError that adds nothing but its name. */
function errorKind(name) {
  // A computed key names the class (Function.name) too; errorName survives minifying.
  const Class = { [name]: class extends WebAttentionError { static errorName = name; } }[name];
  classes[name] = Class;
  return Class;
}

/** A tensor whose shape (or data length) does not fit the call. */
export const ShapeError = errorKind('ShapeError');
/** A value of the wrong kind: a Float64Array where a Float32Array belongs, a string for a tensor. */
export const DTypeError = errorKind('DTypeError');
/** A state-dict entry that is missing, unknown or misshaped. */
export const StateDictError = errorKind('StateDictError');
/** A safetensors file that breaks the format (loadSafetensors): its message names the problem. */
export const SafetensorsError = errorKind('SafetensorsError');
/** A GGUF file that breaks the format (loadGguf), or a tensor type it cannot return: its message names the problem. */
export const GgufError = errorKind('GgufError');
/** An unknown option, or an option value out of range. */
export const OptionError = errorKind('OptionError');
/** The WASM heap could not grow. */
export const MemoryError = errorKind('MemoryError');
/**
 * A KV cache used wrongly: appending past its maxLength, or with a module other than the one
 * whose createCache() made it.
 */
export const CacheError = errorKind('CacheError');
/** A worker of the thread pool failed (crashed, exited or could not start). */
export const WorkerError = errorKind('WorkerError');
/** A backend that cannot run here: backend 'webgpu' without WebGPU, an adapter or a device. */
export const BackendError = errorKind('BackendError');
/**
 * A file of the package (a .wasm, its glue, a worker) could not be fetched or is not what it should
 * be, e.g. HTML served in place of the .wasm; the message names the URL and the fix.
 */
export const LoadError = errorKind('LoadError');

/** A call on a module after dispose(). Its fields are always the same, so only the message varies. */
export class DisposedError extends WebAttentionError {
  static errorName = 'DisposedError';

  constructor(message, argument = 'this') {
    super(message, { argument, expected: argument === 'this' ? 'a live module' : 'a live object', actual: 'disposed' });
  }
}
classes.DisposedError = DisposedError;

/** A typed error as plain data, to post from a worker (structured clone drops the class). */
export function errorToData(e) {
  return { name: e.name, message: e.message, argument: e.argument, expected: e.expected, actual: e.actual };
}

/** The typed error again, on the other side. */
export function errorFromData({ name, message, argument, expected, actual }) {
  const Class = Object.hasOwn(classes, name) ? classes[name] : WebAttentionError;
  return new Class(message, { argument, expected, actual });
}

/** "[2, 5, 16]": shapes print the same way in JS and C++ messages. */
export function formatShape(shape) {
  return `[${Array.from(shape).join(', ')}]`;
}

/** Human-readable kind of any value, for "got ..." in messages. */
export function describe(value) {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  const type = typedArrayType(value);
  if (type) return `${type}(${typedArrayLength(value)})`;
  if (ArrayBuffer.isView(value)) return value.constructor?.name ?? 'ArrayBufferView';
  if (Array.isArray(value)) return `Array(${value.length})`;
  if (typeof value === 'object') {
    const name = value.constructor?.name ?? 'object';
    // Not a typed array (no internal slots: typedArrayType() said so above), yet named like one: a
    // Proxy around one, or a look-alike. Its memory cannot be read, and its claimed name alone
    // would give "expected Float32Array, got Float32Array".
    if (/^(Big)?(Int|Uint|Float)(8|16|32|64)(Clamped)?Array$/.test(name)) {
      return `an object posing as ${name} (a Proxy or a look-alike, not the typed array itself)`;
    }
    return name;
  }
  // JSON.stringify would print NaN and Infinity as null and throw on a BigInt.
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  if (typeof value === 'bigint') return `bigint ${value}n`;
  return `${typeof value} ${String(value)}`;
}

const byCoreName = { ShapeError, StateDictError, ConfigError: OptionError, MemoryError, CacheError };

// The core's argument names (its C++ API's) as a JS caller spells them: the argument and the
// message of a core error name what the caller wrote. Names not listed (query, key, window, the
// state-dict keys such as in_proj_weight) are the same in both.
const JS_NAMES = {
  embed_dim: 'embedDim', num_heads: 'numHeads', num_kv_heads: 'numKvHeads', head_dim: 'headDim',
  value_head_dim: 'valueHeadDim', rotary_dim: 'rotary.dim', rotary_base: 'rotary.base',
  max_length: 'maxLength', batch_size: 'batchSize', key_padding_mask: 'keyPaddingMask',
  attn_mask: 'attnMask', state_dict: 'stateDict', head_bilinear_form: 'headBilinearForm',
  position_ids: 'positionIds',
};
const inJsWords = (text) => text.replace(/\b[a-z]+(?:_[a-z]+)+\b/g, (word) => JS_NAMES[word] ?? word);

/** Rethrows an error string from the WASM core ("Class|argument|message") as a typed JS error. */
export function throwCoreError(coreMessage) {
  const [kind, argument, ...message] = coreMessage.split('|');
  const Class = byCoreName[kind] ?? WebAttentionError;
  throw new Class(inJsWords(message.join('|')), { argument: argument ? (JS_NAMES[argument] ?? argument) : undefined });
}
