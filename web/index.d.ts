// Types for the `webattention` package (hand-written: Emscripten 3.1.6 cannot emit them).
// The module names come from web/modules.json (scripts/gen_modules.mjs writes dist/modules.d.ts).
import type { WasmModuleName } from './dist/modules.js';

export type { WasmModuleName };
export * from './types/tensors.js';
export * from './types/module_options.js';
export * from './types/gpu_kernels.js';
export * from './types/gpu_tensors.js';
import type {
  CacheDtype, FloatInput, HalfTensor, HalfTensorInput, Mask, PositionIds, Tensor, TensorInput,
} from './types/tensors.js';
import type {
  CacheOptions, MultiHeadAttentionOptions, ResolvedMultiHeadAttentionConfig, RotaryOptions,
} from './types/module_options.js';
import type { GpuKernelPins, GpuKernelVariants, GpuProfile } from './types/gpu_kernels.js';
import type { FloatGpuTensorInput, GpuAttentionResult, GpuBatch, GpuTensorInput as GpuTensorOnly, HalfGpuTensorInput, OrtGpuTensorInput } from './types/gpu_tensors.js';

/** A GPU input of forward(): this package's form or onnxruntime-web's. */
type GpuTensorInput = GpuTensorOnly | OrtGpuTensorInput;
/** A GPU input whose call's 'cpu' results are float32. */
type FloatGpuInput = FloatGpuTensorInput | OrtGpuTensorInput;


/** KvCache.read()'s result. */
export interface CacheContents {
  /** [batchSize, numKvHeads, n, headDim]. */
  key: Tensor;
  /** [batchSize, numKvHeads, n, valueHeadDim]. */
  value: Tensor;
  /** The position of index 0 along n (length − n). */
  firstPosition: number;
}

/** Keys and values of the positions appended so far, for incremental decoding; allocated once. */
export class KvCache {
  private constructor();
  /**
   * Positions appended so far, counting the calls made on it that still run (in order): every
   * row's one length. Where the rows hold different numbers (a forward() with `rows`, or
   * truncate(lengths)), reading it throws CacheError (naming `lengths`): read `lengths` then.
   */
  readonly length: number;
  /** Each row's positions (batchSize of them), counted as `length` counts them. */
  readonly lengths: number[];
  readonly batchSize: number;
  /** 0: no limit (a window without maxLength). */
  readonly maxLength: number;
  /** 0: no window. */
  readonly window: number;
  readonly dtype: CacheDtype;
  /** Made by mha.encode(): an encoder's keys and values, read-only (reset(), truncate() and keep() throw CacheError). */
  readonly encoded: boolean;
  /**
   * The keys (as stored: rotated) and values of the positions held, in position order: all of
   * them, or with a window the last min(length, window); after the calls made before it.
   * onnxruntime's present_key / present_value. Rows of different lengths: CacheError (naming
   * `lengths`).
   */
  read(): Promise<CacheContents>;
  /** Back to length 0 without freeing, after the calls made before it. */
  reset(): void;
  /**
   * Drops positions >= length (an integer, one for every row; at most each row's length, and with
   * a window whose ring has wrapped at least the oldest position held plus the window), after the
   * calls made before it: later calls continue as if they had never been appended. With a list,
   * one length per row (batchSize of them), each row cut on its own. CacheError (naming `length`
   * or `lengths`) otherwise, the cache unchanged.
   */
  truncate(length: number | ArrayLike<number>): void;
  /**
   * Keeps only `indices` (strictly increasing, in [0, L)) among the last forward()'s L new
   * positions (speculative decoding: the accepted drafts), moved to consecutive positions from
   * the length before that call; the rest are dropped, after the calls made before it. Afterwards
   * every result, read() included, equals a fresh run over the kept tokens alone: a moved key is
   * rotated (RoPE) at its new position. CacheError (naming `indices`) otherwise, the cache
   * unchanged: indices repeated, unsorted or out of range, no forward() since the cache was made,
   * reset, truncated or kept, an encoded cache, a window's ring that no longer holds them, a
   * last call on some `rows` or on rows of different lengths (keep() takes a call on every row).
   */
  keep(indices: ArrayLike<number>): void;
  /**
   * A new cache of the same module (same dtype, backend and options) holding a copy of this
   * one's positions, after the calls made before it; later calls on either leave the other as it
   * was. Freed by its own dispose() or the module's.
   */
  fork(): KvCache;
  /** Frees the storage once the calls made before it finish; later use throws DisposedError (as after the module's dispose()). */
  dispose(): void;
}

export interface ForwardOptions {
  /** [B, S] (or [S] unbatched). Uint8Array: nonzero = ignore that key. Float32Array: additive. */
  keyPaddingMask?: Mask;
  /**
   * [L, S] or [B*numHeads, L, S]. Uint8Array: nonzero = not allowed. Float32Array: additive. With a
   * cache, a verification mask among the L new positions, on top of the causal rule: [L, L],
   * [B, L, L] or [B*numHeads, L, L], entry (i, j) for new query i and new key j (the cached keys
   * stay visible); a tree of drafted tokens, each seeing its own branch.
   */
  attnMask?: Mask;
  /** Query i sees keys j <= i only. */
  isCausal?: boolean;
  /** Return the attention probabilities (default false: no L×S buffer is made). */
  needWeights?: boolean;
  /** Average the weights over heads: [B, L, S] (default true), else [B, numHeads, L, S]. */
  averageAttnWeights?: boolean;
  /**
   * A cache of this module (createCache()): key and value are the L new positions ([B, L, kdim],
   * [B, L, vdim]), appended to it; each query attends to every cached position up to its own
   * (causal, bottom-right: isCausal is implied) and within the cache's window. keyPaddingMask is
   * then [B, T] and weights [B, (numHeads,) L, T], T = cache.length after the append. attnMask is
   * then a verification mask among the new positions (see attnMask). Calls with a cache run where the cache was made: on the GPU when the module used
   * WebGPU at createCache(), else on the calling thread's WASM. Rows of different lengths (see
   * `rows`): each row's positions continue from its own length; T is the longest row's, and a
   * shorter row's later weight columns are 0.
   */
  cache?: KvCache;
  /**
   * With a batched cache: the cache rows this call appends to (the ones still decoding), strictly
   * increasing, one per batch row of query, key and value (their batch dimension is rows.length).
   * Each row's queries see that row's positions only, from its own length on (RoPE positions
   * too); the result equals one cache per row, bit for bit. On a WebGPU device of fewer than 9
   * storage buffers per shader stage, a CacheError naming `rows`. ShapeError naming
   * `rows` when out of range, repeated, unsorted or not one per batch row; the cache is left as it
   * was.
   */
  rows?: ArrayLike<number>;
  /**
   * A rotary module's (create({ rotary })) positions of the L rows, [B, L] Int32Array: row i of
   * batch b (its query and its key, so S must equal L without a cache) is rotated at
   * positionIds[b, i] instead of i (cache.length + i with a cache). Integers >= 0, below
   * rotary.table's rows with a table. Masks, causality and the cache's order still follow the rows;
   * a cache's window counts in the ids (a draft at its depth sees the cached keys its branch's own
   * run sees; docs/attention-math/decoding.md §9).
   */
  positionIds?: PositionIds | null;
  /**
   * Where the results are: 'cpu' (default: typed arrays) or 'gpu-buffer' (GpuTensors on the
   * module's device, no readback; float16 for float16 inputs, else float32). Needs the module's GPU: on a
   * module computing on WASM it is an OptionError; with host inputs a call the module computes on
   * the CPU ('auto' under webgpuMinFlops) has its result put into a new buffer.
   */
  output?: 'cpu' | 'gpu-buffer';
  /**
   * Records the call into this GpuBatch instead of submitting it (needs output 'gpu-buffer'; an
   * OptionError otherwise, or for a batch of another device): batch.submit() submits every call
   * recorded, in one queue.submit() (docs/webgpu/tensors_and_steps.md, "One submit per step").
   */
  batch?: GpuBatch;
  /**
   * The array the output is written into, returned as output.data: a Float32Array (a Uint16Array
   * for 16-bit inputs) of exactly the output's elements, so that a loop of calls makes no new
   * output array per call. It may be an input's own array (the inputs are read first). Written
   * before the promise resolves; with output 'gpu-buffer' an OptionError. Detached or shrunk
   * while the call waited: a ShapeError naming `out` (a call with a cache on WASM then appends
   * nothing; one on the GPU has appended).
   */
  out?: Float32Array | Uint16Array;
}

export interface AttentionResult {
  output: Tensor;
  /** Present when weights were asked for, else null. */
  attnWeights: Tensor | null;
}
/** The result of a call with needWeights: true. */
export interface AttentionResultWithWeights extends AttentionResult {
  attnWeights: Tensor;
}
/** The result of a call without needWeights. */
export interface AttentionResultWithoutWeights extends AttentionResult {
  attnWeights: null;
}
/** The result of a call whose inputs were 16-bit: 16-bit tensors of the same kind. */
export interface HalfAttentionResult {
  output: HalfTensor;
  attnWeights: HalfTensor | null;
}

export interface StateDictEntryShape {
  name: string;
  shape: number[];
}

/**
 * ORT MatMulNBits' 4-bit initializers of an [N, K] weight, as its spec lays them out: B
 * [N][ceil(K / blockSize)][blockSize / 2] bytes, codes low nibble first along K; scales
 * [N][blocks] (float32, or float16 bits); zero points [N][ceil(blocks / 2)] bytes, low nibble first
 * (absent: 8). Value (code − zero point) · scale. Loads as stored into a weightsDtype 'int4' module.
 */
export interface MatMulNBitsTensor {
  dtype: 'int4';
  data: Uint8Array;
  scales: Float32Array | { data: Uint16Array; dtype: 'float16' };
  zeroPoints?: Uint8Array;
  blockSize: 32 | 64 | 128 | 256;
  shape: [number, number];
}

/** Weights quantised already, loaded as stored (bit-exactly): GGUF q4_0 → int4, q8_0 → int8, MatMulNBits → int4. */
export type QuantisedTensor = GgufBlockTensor | MatMulNBitsTensor;

/** Keys exactly as torch.nn.MultiheadAttention.state_dict() (or another layout's). */
export type StateDict =
  | Record<string, TensorInput | HalfTensorInput | Float32Array | QuantisedTensor>
  | Map<string, TensorInput | HalfTensorInput | Float32Array | QuantisedTensor>;

export interface LoadStateDictOptions {
  /**
   * Key prefix of the module inside a bigger model, e.g. 'layers.0.self_attn.': only keys that
   * start with it are the module's, and it is stripped from them (default '').
   */
  prefix?: string;
  /**
   * true (default): a key that is not one of the module's is a StateDictError. false: such keys
   * (the rest of the model) are ignored. Missing keys are errors either way.
   */
  strict?: boolean;
  /**
   * The checkpoint's naming (default 'torch': nn.MultiheadAttention's). 'hf': q_proj, k_proj,
   * v_proj, o_proj (.weight, .bias; Llama, Mistral, Qwen, Gemma) or Phi-3's packed qkv_proj;
   * 'gpt2': c_attn, c_proj as Conv1D ([in, out], transposed); 'bert': self.query, self.key,
   * self.value, output.dense (prefix '...attention.'). A key of a bias the module lacks, or a
   * bias it has that the file lacks, is a StateDictError naming the bias option that fits.
   * 'gguf': llama.cpp's attn_q, attn_k, attn_v, attn_output (.weight, .bias), attn_qkv,
   * attn_q_norm, attn_k_norm (prefix 'blk.N.'); a GgufFile is taken whole (the rest of the model
   * is passed over), Q/K rows as stored (llama: rotary.interleaved; fromGguf() sets it).
   */
  layout?: 'torch' | 'hf' | 'gpt2' | 'bert' | 'gguf';
}

/** One tensor of a .safetensors file, as float32 whatever the file stored. */
export interface SafetensorsTensor extends Tensor {
  /** The file's dtype: F16 and BF16 values are converted to float32 exactly. */
  dtype: 'F32' | 'F16' | 'BF16';
}

/** One F16 or BF16 tensor of loadSafetensors(bytes, { convert: false }): its 16-bit bits. */
export interface SafetensorsHalfTensor {
  data: Uint16Array;
  shape: number[];
  dtype: 'F16' | 'BF16';
}

/** loadSafetensors()'s result: name → tensor in the header's order, and the file's metadata. */
export interface SafetensorsFile<T = SafetensorsTensor> extends Map<string, T> {
  /** The header's __metadata__ strings (empty when the file has none). */
  readonly metadata: Map<string, string>;
}

export interface HeadBilinearForm {
  matrix: Tensor;
  /** Singular values of W_i, largest first: min(headDim, embedDim, kdim) of them (computed in double). */
  singularValues: Float64Array;
  /** How many singular values exceed max|W_i| · max(embedDim, kdim) · 1e-6 (docs/attention-math/heads.md §5). */
  rank: number;
  /** (embedDim + kdim) · headDim */
  factoredParameters: number;
  /** embedDim · kdim */
  fullParameters: number;
}

export class MultiHeadAttention {
  private constructor();
  /** Loads the WASM core on first use. Weights are undefined until loadStateDict(). */
  static create(options: MultiHeadAttentionOptions): Promise<MultiHeadAttention>;
  /**
   * Layer `layer` of a Hugging Face config.json (attentionOptionsFromConfig()'s options), created;
   * its loadStateDict() then defaults to the checkpoint's layout and prefix (and adds qkNormWeightOffset
   * to the q/k norm weights). OptionError naming the
   * config field for an unknown model_type or an attention field it does not understand.
   */
  static fromConfig(config: HfConfig, options: FromConfigModuleOptions): Promise<MultiHeadAttention>;
  /**
   * Layer `layer` of a GGUF file (llama, qwen2, qwen3), created with what its metadata and
   * tensors imply (sizes, RoPE and the pairing its stored Q/K rows take, biases, qk-norm, the
   * weightsDtype that keeps its tensors as stored: Q4_0 → int4, Q8_0 → int8) and loaded. OptionError
   * naming the key for an unknown architecture, a metadata key that changes attention it does not
   * read, or attention weights of mixed types (give weightsDtype with a dequantised file).
   */
  static fromGguf(file: GgufFile, options: FromGgufOptions): Promise<MultiHeadAttention>;
  /** Where a fromConfig() or fromGguf() module came from; null for a create()d one. */
  readonly checkpoint: CheckpointInfo | null;
  readonly config: ResolvedMultiHeadAttentionConfig;
  /**
   * 'webgpu' (with backend 'auto', calls under webgpuMinFlops still run on WASM) or 'wasm'
   * (also with 'auto' before its first call of at least webgpuMinFlops, and after the WebGPU
   * device was lost: the module then carries on on WASM). A hostWeights: false module has no WASM
   * copy and stays 'webgpu' after a loss, its calls refused.
   */
  readonly backend: 'wasm' | 'webgpu';
  /** What the WebGPU kernel selection measured and chose on this module's device; null without a GPU in use. */
  gpuProfile(): GpuProfile | null;
  /**
   * The GPUDevice this module computes on (GPU-resident tensors' buffers must be on it), or null
   * while it has none ('wasm'; 'auto' before its first GPU call; after a device loss).
   */
  readonly gpuDevice: object | null;
  /** Threads forward() computes on; 1 after a worker failed (the module then runs on one thread). */
  readonly threads: number;
  /** The entries loadStateDict() expects, in PyTorch's order. */
  readonly stateDictShapes: StateDictEntryShape[];
  /**
   * Strict by default: every expected key, no others; nothing changes when an entry is wrong.
   * Where the module packs in_proj_weight [3E, E], separate q_proj_weight, k_proj_weight and
   * v_proj_weight [E, E] are accepted too (all three, and not with in_proj_weight).
   */
  loadStateDict(stateDict: StateDict, options?: LoadStateDictOptions): void;
  /**
   * Storage for incremental decoding, allocated once (MemoryError when it does not fit); pass it
   * as forward()'s `cache`. Freed by its dispose() or this module's.
   */
  createCache(options: CacheOptions): KvCache;
  /**
   * query [B, L, embedDim] (or [L, embedDim]), key [B, S, kdim], value [B, S, vdim].
   * A query row whose keys are all masked gives zero attention output (PyTorch: NaN).
   */
  /**
   * Cross-attention: an encoder's output key [B, S, kdim] (or [S, kdim]) and value [B, S, vdim]
   * projected once into a read-only cache of S positions (not rotated: a rotary module throws
   * OptionError). forward(query, null, null, { cache }) then attends to all of them, with no
   * causal rule and keyPaddingMask [B, S]; weights [B, (numHeads,) L, S]. On a WebGPU module the
   * encoded cache is stored and attended on the GPU (key and value may then be GPU tensors, an
   * encoder's output left on the device, and its steps take GPU queries and output 'gpu-buffer').
   */
  encode(key: TensorInput | HalfTensorInput | GpuTensorInput, value: TensorInput | HalfTensorInput | GpuTensorInput, options?: { dtype?: CacheDtype }): Promise<KvCache>;
  forward(query: HalfGpuTensorInput, key: null, value: null, options: ForwardOptions & { cache: KvCache; output: 'gpu-buffer' }): Promise<GpuAttentionResult<'float16'>>;
  forward(query: TensorInput | FloatGpuInput, key: null, value: null, options: ForwardOptions & { cache: KvCache; output: 'gpu-buffer' }): Promise<GpuAttentionResult>;
  forward(query: HalfTensorInput, key: null, value: null, options: ForwardOptions & { cache: KvCache; output: 'gpu-buffer' }): Promise<GpuAttentionResult<'float32' | 'float16'>>;
  forward(query: TensorInput | HalfTensorInput | GpuTensorInput, key: null, value: null, options: ForwardOptions & { cache: KvCache }): Promise<AttentionResult | HalfAttentionResult>;
  /** output 'gpu-buffer': float16 results for float16 inputs (host or GPU), float32 for the others (bfloat16 among them). */
  forward(query: HalfGpuTensorInput, key: HalfGpuTensorInput, value: HalfGpuTensorInput, options: ForwardOptions & { output: 'gpu-buffer' }): Promise<GpuAttentionResult<'float16'>>;
  forward(query: TensorInput | FloatGpuInput, key: TensorInput | FloatGpuInput, value: TensorInput | FloatGpuInput, options: ForwardOptions & { output: 'gpu-buffer' }): Promise<GpuAttentionResult>;
  forward(query: FloatInput | GpuTensorInput, key: FloatInput | GpuTensorInput, value: FloatInput | GpuTensorInput, options: ForwardOptions & { output: 'gpu-buffer' }): Promise<GpuAttentionResult<'float32' | 'float16'>>;
  forward(query: HalfTensorInput | HalfGpuTensorInput, key: HalfTensorInput | HalfGpuTensorInput, value: HalfTensorInput | HalfGpuTensorInput, options?: ForwardOptions): Promise<HalfAttentionResult>;
  forward(query: TensorInput | FloatGpuInput, key: TensorInput | FloatGpuInput, value: TensorInput | FloatGpuInput, options: ForwardOptions & { needWeights: true }): Promise<AttentionResultWithWeights>;
  forward(query: TensorInput | FloatGpuInput, key: TensorInput | FloatGpuInput, value: TensorInput | FloatGpuInput, options?: ForwardOptions & { needWeights?: false }): Promise<AttentionResultWithoutWeights>;
  forward(query: TensorInput | FloatGpuInput, key: TensorInput | FloatGpuInput, value: TensorInput | FloatGpuInput, options?: ForwardOptions): Promise<AttentionResult>;
  /**
   * docs/attention-math/heads.md §5: head `head`'s W_i = W_i^Q W_i^Kᵀ ([embedDim, kdim]; scores are
   * x W_i yᵀ / sqrt(headDim) without biases), its rank and both parameter counts.
   */
  headBilinearForm(head: number): HeadBilinearForm;
  /** Frees the WASM memory of this module; later calls throw DisposedError. */
  dispose(): void;
}

/** A Hugging Face config.json, parsed (only the attention's fields are read). */
export type HfConfig = Record<string, unknown>;

export interface FromConfigOptions {
  /** The decoder or encoder layer, in [0, num_hidden_layers). */
  layer: number;
  /** The layer's state-dict prefix, if not the published checkpoint's ('model.layers.3.self_attn.'). */
  prefix?: string;
  /** Replaces the config's RoPE, e.g. a { table } for a rope_scaling fromConfig does not compute (yarn, longrope). */
  rotary?: RotaryOptions;
}

export type FromConfigModuleOptions = FromConfigOptions
  & Pick<MultiHeadAttentionOptions, 'weightsDtype' | 'activations' | 'threads' | 'backend' | 'gpu' | 'webgpuMinFlops' | 'expect' | 'hostWeights' | 'gpuPrecision'>;

export type FromGgufOptions = { layer: number }
  & Pick<MultiHeadAttentionOptions, 'weightsDtype' | 'threads' | 'backend' | 'gpu' | 'webgpuMinFlops' | 'expect' | 'hostWeights' | 'gpuPrecision'>;

export interface FromConfigResult {
  /** config.model_type ('llama' for SmolLM too). */
  modelType: string;
  layer: number;
  /** create()'s options for the layer. */
  options: MultiHeadAttentionOptions;
  /** createCache()'s window for a sliding-window layer; null for full attention. */
  window: number | null;
  /** Whether the model's self-attention is causal (forward's isCausal, or a cache). */
  causal: boolean;
  /** loadStateDict()'s layout and prefix for the published checkpoint. */
  load: { layout: 'hf' | 'gpt2' | 'bert'; prefix: string };
  /**
   * What the file's q_norm/k_norm weights lack: 1 for Gemma 3 (its norm scales by 1 + w), else 0. A fromConfig()
   * module's loadStateDict() adds it; a create()d one needs it added to the weights before the load.
   */
  qkNormWeightOffset: number;
}

export interface CheckpointInfo {
  modelType: string;
  layer: number;
  window: number | null;
  causal: boolean;
  layout: 'hf' | 'gpt2' | 'bert' | 'gguf';
  prefix: string;
  qkNormWeightOffset: number;
}

/** The mapping MultiHeadAttention.fromConfig() uses, without creating anything (docs/checkpoints.md). */
export function attentionOptionsFromConfig(config: HfConfig, options: FromConfigOptions): FromConfigResult;

export interface ScaledDotProductAttentionOptions {
  /** [L, S] or [..., L, S]. */
  attnMask?: Mask;
  isCausal?: boolean;
  /** Default 1 / sqrt(dk). */
  scale?: number;
  needWeights?: boolean;
  /** As forward()'s `out`: the array the output [..., L, dv] is written into. */
  out?: Float32Array | Uint16Array;
  /**
   * Where it computes: 'wasm' (default for host tensors), 'webgpu' (default with a GPU tensor or
   * output 'gpu-buffer'), or 'auto' (the GPU from webgpuMinFlops): create()'s meanings.
   */
  backend?: MultiHeadAttentionOptions['backend'];
  /** As create()'s: the WebGPU (or the GPUDevice the GPU tensors are on). */
  gpu?: MultiHeadAttentionOptions['gpu'];
  webgpuMinFlops?: number;
  /** 'gpu-buffer': the results are GPU tensors, not read back (docs/webgpu.md). */
  output?: 'cpu' | 'gpu-buffer';
  /** As forward()'s: the call recorded into a GpuBatch (with output 'gpu-buffer'). */
  batch?: GpuBatch;
}

/** softmax(q kᵀ · scale + attnMask) v for q [..., L, dk], k [..., S, dk], v [..., S, dv]. */
export function scaledDotProductAttention(
  q: HalfGpuTensorInput, k: HalfGpuTensorInput, v: HalfGpuTensorInput, options: ScaledDotProductAttentionOptions & { output: 'gpu-buffer' },
): Promise<GpuAttentionResult<'float16'>>;
export function scaledDotProductAttention(
  q: TensorInput | FloatGpuInput, k: TensorInput | FloatGpuInput, v: TensorInput | FloatGpuInput, options: ScaledDotProductAttentionOptions & { output: 'gpu-buffer' },
): Promise<GpuAttentionResult>;
export function scaledDotProductAttention(
  q: FloatInput | GpuTensorInput, k: FloatInput | GpuTensorInput, v: FloatInput | GpuTensorInput, options: ScaledDotProductAttentionOptions & { output: 'gpu-buffer' },
): Promise<GpuAttentionResult<'float32' | 'float16'>>;
export function scaledDotProductAttention(
  q: HalfTensorInput | HalfGpuTensorInput, k: HalfTensorInput | HalfGpuTensorInput, v: HalfTensorInput | HalfGpuTensorInput, options?: ScaledDotProductAttentionOptions,
): Promise<HalfAttentionResult>;
export function scaledDotProductAttention(
  q: TensorInput | FloatGpuInput, k: TensorInput | FloatGpuInput, v: TensorInput | FloatGpuInput, options: ScaledDotProductAttentionOptions & { needWeights: true },
): Promise<AttentionResultWithWeights>;
export function scaledDotProductAttention(
  q: HalfTensorInput, k: HalfTensorInput, v: HalfTensorInput, options?: ScaledDotProductAttentionOptions,
): Promise<HalfAttentionResult>;
export function scaledDotProductAttention(
  q: TensorInput, k: TensorInput, v: TensorInput, options: ScaledDotProductAttentionOptions & { needWeights: true },
): Promise<AttentionResultWithWeights>;
export function scaledDotProductAttention(
  q: TensorInput | FloatGpuInput, k: TensorInput | FloatGpuInput, v: TensorInput | FloatGpuInput, options?: ScaledDotProductAttentionOptions & { needWeights?: false },
): Promise<AttentionResultWithoutWeights>;
export function scaledDotProductAttention(
  q: TensorInput | FloatGpuInput, k: TensorInput | FloatGpuInput, v: TensorInput | FloatGpuInput, options?: ScaledDotProductAttentionOptions,
): Promise<AttentionResult>;

export interface SelfAttentionOptions {
  /** Return the attention probabilities [..., L, L] (default false). */
  needWeights?: boolean;
  /** @deprecated The old name of needWeights (a console warning says so once). */
  returnWeights?: boolean;
  /** Where it computes and where its results go: scaledDotProductAttention()'s options. */
  backend?: ScaledDotProductAttentionOptions['backend'];
  gpu?: ScaledDotProductAttentionOptions['gpu'];
  webgpuMinFlops?: number;
  output?: 'cpu' | 'gpu-buffer';
  batch?: GpuBatch;
}

/** softmax(x xᵀ / sqrt(C)) x for x [L, C] or [..., L, C] (Q = K = V = x). */
export function selfAttention(x: HalfGpuTensorInput, options: SelfAttentionOptions & { output: 'gpu-buffer' }): Promise<GpuAttentionResult<'float16'>>;
export function selfAttention(x: TensorInput | FloatGpuInput, options: SelfAttentionOptions & { output: 'gpu-buffer' }): Promise<GpuAttentionResult>;
export function selfAttention(x: HalfTensorInput | HalfGpuTensorInput, options?: SelfAttentionOptions): Promise<HalfAttentionResult>;
export function selfAttention(x: TensorInput | FloatGpuInput, options: SelfAttentionOptions & ({ needWeights: true } | { returnWeights: true })): Promise<AttentionResultWithWeights>;
export function selfAttention(x: TensorInput | FloatGpuInput, options?: SelfAttentionOptions & { needWeights?: false; returnWeights?: false }): Promise<AttentionResultWithoutWeights>;
export function selfAttention(x: TensorInput | FloatGpuInput, options?: SelfAttentionOptions): Promise<AttentionResult>;

export interface ConfigureOptions {
  /**
   * Where browsers fetch the package's files (.wasm, Emscripten glue .mjs, worker scripts) from,
   * instead of where the package's code is (or where a bundler copied them): the URL of a folder
   * holding the package's web/dist/ files as they are installed (a CDN's copy of the package,
   * e.g. '<cdn>/webattention@<version>/web/dist/'), or a map from a file name
   * ('webattention_core.wasm', 'webattention_core.mjs', 'pool_worker_simd.js', ...) to its URL.
   * On another origin, its server must allow CORS. Node reads the installed files and ignores it.
   * null: the default again.
   */
  wasmPaths?: string | Record<string, string> | null;
  /** WebGPU kernel variants pinned by name (gpuKernelVariants()); may change at any time. null: none. */
  gpuKernels?: GpuKernelPins | null;
}

/**
 * Package-wide settings, before the first create() or call (OptionError after, unless the
 * settings are unchanged): like onnxruntime-web's env.wasm.wasmPaths.
 */
export function configure(options: ConfigureOptions): void;

/** Bytes allocated on the WASM heap (flat across calls when nothing leaks). */
export function wasmMemoryInUse(): Promise<number>;

/** Size of the WASM heap in bytes; it never shrinks, so it is the high-water mark. */
export function wasmHeapBytes(): Promise<number>;

export interface Capabilities {
  backend: 'wasm';
  /** Whether the SIMD128 module runs (else the scalar one: engines without WASM SIMD). */
  simd: boolean;
  /**
   * The module loaded (web/modules.json). 'mt': SIMD128 + pthreads, picked on cross-origin-isolated
   * pages (served as is or bundled). 'relaxed': SIMD128 with relaxed-SIMD multiply-add and dot
   * product, where the engine validates it (and, in a browser whose clock can time it, where it
   * measured faster: relaxedSimdSpeedup, relaxedDotSpeedup); 'mt-relaxed' both. 'scalar': engines without WASM SIMD.
   */
  wasmModule: WasmModuleName;
  /** Threads a module created without the `threads` option uses (at most). */
  threads: number;
  /**
   * How much faster relaxed SIMD's fused multiply-add ran the projection's register block than
   * mul + add on this device when the module was picked, or null where that was not measured
   * (Node, engines without relaxed SIMD, a coarse clock, a forced module). Relaxed modules run
   * from 1.1 up, or from 0.95 up where relaxedDotSpeedup is 1.3 or more.
   */
  relaxedSimdSpeedup: number | null;
  /**
   * How much faster relaxed SIMD's dot product ran the int4 × int8 decode kernel's step than the
   * SIMD128 modules' widened one, measured beside relaxedSimdSpeedup (null where it is null).
   */
  relaxedDotSpeedup: number | null;
}

/**
 * The tensors of a .safetensors file (F32, F16 or BF16; every other dtype is refused), checked
 * as strictly as the reference implementation checks them: a broken file is a SafetensorsError
 * naming the problem. Aligned F32 data is a view on `bytes`, everything else a copy.
 */
export function loadSafetensors(bytes: ArrayBufferLike | ArrayBufferView, options?: { convert?: true }): SafetensorsFile;
/** convert: false: F16 and BF16 tensors keep their bits (views on `bytes` where 2-byte aligned). */
export function loadSafetensors(bytes: ArrayBufferLike | ArrayBufferView, options: { convert: boolean }): SafetensorsFile<SafetensorsTensor | SafetensorsHalfTensor>;

/** Q8_0 or Q4_0 blocks of a GGUF file as stored (llama.cpp's layout), `shape` row-major. */
export interface GgufBlockTensor {
  /** q8_0: 34-byte blocks (f16 d, 32 int8; value q·d). q4_0: 18-byte blocks (f16 d, 16 bytes: low nibbles elements 0–15, high nibbles 16–31; value (q − 8)·d). */
  dtype: 'q8_0' | 'q4_0';
  data: Uint8Array;
  shape: number[];
}

/** A metadata value of a GGUF file: UINT64 / INT64 as bigint, BOOL as boolean, ARRAY as an array. */
export type GgufValue = number | bigint | boolean | string | GgufValue[];

/** loadGguf()'s result: name → tensor in the file's order, with the file's metadata. */
export interface GgufFile<T = Tensor | HalfTensor | GgufBlockTensor> extends Map<string, T> {
  /** The key-value pairs in the file's order (general.architecture, llama.attention.head_count, ...). */
  readonly metadata: Map<string, GgufValue>;
  /** name → the GGML type the file stores it as ('F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', ...). */
  readonly types: Map<string, string>;
  readonly version: 2 | 3;
  /** general.alignment, 32 when absent. */
  readonly alignment: number;
}

/**
 * The tensors and metadata of a GGUF file (llama.cpp's format, versions 2 and 3, little-endian),
 * checked strictly: a broken file is a GgufError naming the problem. Shapes are row-major, as
 * PyTorch's: GGUF's ne (innermost first) reversed, so a matrix is [ne[1], ne[0]]. F32 is float32,
 * F16 / BF16 16-bit tensors, Q8_0 / Q4_0 their blocks as stored (views on `bytes` where aligned);
 * any other type is a GgufError naming the tensor and its type.
 */
export function loadGguf(bytes: ArrayBufferLike | ArrayBufferView, options?: { dequantize?: false }): GgufFile;
/** dequantize: true: every tensor float32 by llama.cpp's dequantisation (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0; others a GgufError). */
export function loadGguf(bytes: ArrayBufferLike | ArrayBufferView, options: { dequantize: true }): GgufFile<Tensor>;
export function loadGguf(bytes: ArrayBufferLike | ArrayBufferView, options: { dequantize: boolean }): GgufFile;

/**
 * The bytes of a .safetensors file holding `tensors` (name → tensor): float32 tensors as F32,
 * 16-bit ones ({ data: Uint16Array, dtype }) as F16 / BF16, their bits as given; `metadata`
 * becomes the header's __metadata__. F32 tensors come first in the file (aligned, so that
 * loadSafetensors() views them in place); loadSafetensors() reads the file back bit for bit.
 */
export function saveSafetensors(
  tensors: Map<string, TensorInput | HalfTensorInput> | Record<string, TensorInput | HalfTensorInput>,
  options?: { metadata?: Map<string, string> | Record<string, string> },
): Uint8Array;

/** Which module and features this engine uses (loads the core if needed). */
export function capabilities(): Promise<Capabilities>;

/** Resolves once the WASM core is loaded (optional: every call loads it on demand; under Node it starts loading at import). */
export function ready(): Promise<void>;

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

/** Resolves to the WebGPU kernel variants' names, per family. */
export function gpuKernelVariants(): Promise<GpuKernelVariants>;
