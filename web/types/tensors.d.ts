// The package's tensor and storage types (re-exported by web/index.d.ts).

/** Row-major tensor. Masks use Uint8Array (nonzero = not allowed) or Float32Array (additive). */
export interface Tensor<T extends Float32Array | Uint8Array = Float32Array> {
  data: T;
  shape: number[];
}

/** A Tensor as an input: its shape may be a readonly array (`as const`); it is copied at the call. */
export interface ShapedInput<T extends Float32Array | Uint8Array = Float32Array> {
  data: T;
  shape: readonly number[];
}

/**
 * A tensor as onnxruntime-web and transformers.js make them: `dims` where Tensor says `shape`,
 * and an optional `type` that must agree with the data ('float32'; 'bool' or 'uint8' for a
 * Uint8Array mask; anything else is a DTypeError).
 */
export interface DimsTensor<T extends Float32Array | Uint8Array = Float32Array> {
  data: T;
  dims: readonly number[];
  type?: T extends Float32Array ? 'float32' : 'bool' | 'uint8';
}

/** What every input accepts: a Tensor or a DimsTensor. Results are always Tensors. */
export type TensorInput<T extends Float32Array | Uint8Array = Float32Array> = ShapedInput<T> | DimsTensor<T>;

export type Mask = TensorInput<Uint8Array> | TensorInput<Float32Array>;

/**
 * forward()'s positionIds: integers >= 0, [B, L] ([L] for an unbatched call), as a tensor or an
 * onnxruntime-web / transformers.js one (`dims`, `type` 'int32').
 */
export type PositionIds = { data: Int32Array; shape: readonly number[] } | { data: Int32Array; dims: readonly number[]; type?: 'int32' };

/** The kinds of 16-bit float: IEEE binary16 and bfloat16 (a float32's top half). */
export type HalfDtype = 'float16' | 'bfloat16';

/**
 * A 16-bit float tensor: `data` holds the bits, `dtype` says which kind ('F16' / 'BF16' as
 * safetensors spells them). A Uint16Array without a dtype is a DTypeError.
 */
export interface HalfInput {
  data: Uint16Array;
  shape: readonly number[];
  dtype: HalfDtype | 'F16' | 'BF16';
}

/**
 * A 16-bit tensor as onnxruntime-web and transformers.js make it, or with `type` beside `shape`:
 * `type` is taken wherever `dtype` is (both given must agree).
 */
export interface HalfDimsInput {
  data: Uint16Array;
  dims: readonly number[];
  type: HalfDtype | 'F16' | 'BF16';
}

/** A 16-bit tensor with `shape` and onnxruntime-web's `type` key. */
export interface HalfTypedInput {
  data: Uint16Array;
  shape: readonly number[];
  type: HalfDtype | 'F16' | 'BF16';
}

/** A 16-bit tensor result: the inputs' kind, values rounded to nearest-even from float32. */
export interface HalfTensor {
  data: Uint16Array;
  shape: number[];
  dtype: HalfDtype;
}

/** What forward(), scaledDotProductAttention() and selfAttention() take: one dtype per call. */
export type FloatInput = TensorInput | HalfInput | HalfDimsInput | HalfTypedInput;
export type HalfTensorInput = HalfInput | HalfDimsInput | HalfTypedInput;

/** create()'s weightsDtype: how the weight matrices are stored (biases are float32). */
export type WeightsDtype = 'float32' | 'float16' | 'bfloat16' | 'int8' | 'int4';
/** create()'s activations: how the projections' inputs meet the weights. */
export type ActivationsDtype = 'float32' | 'int8';
/** createCache()'s dtype: how keys and values are stored. */
export type CacheDtype = 'float32' | 'float16' | 'int8';
