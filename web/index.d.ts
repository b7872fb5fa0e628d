// Types for the `webattention` package (hand-written: Emscripten 3.1.6 cannot emit them).
// The module names come from web/modules.json (scripts/gen_modules.mjs writes dist/modules.d.ts).
import type { WasmModuleName } from './dist/modules.js';

export type { WasmModuleName };
export * from './types/tensors.js';
export * from './types/module_options.js';
export * from './types/gpu_kernels.js';
export * from './types/gpu_tensors.js';
export * from './types/kv_cache.js';
export * from './types/checkpoints.js';
export * from './types/errors.js';
import type {
  CacheDtype, FloatInput, HalfTensor, HalfTensorInput, Mask, PositionIds, Tensor, TensorInput,
} from './types/tensors.js';
import type {
  CacheOptions, MultiHeadAttentionOptions, ResolvedMultiHeadAttentionConfig,
} from './types/module_options.js';
import type { GpuKernelPins, GpuKernelVariants, GpuProfile } from './types/gpu_kernels.js';
import type { KvCache } from './types/kv_cache.js';
import type {
  CheckpointInfo, FromConfigModuleOptions, FromGgufOptions, GgufFile, HfConfig, LoadStateDictOptions, StateDict, StateDictEntryShape,
} from './types/checkpoints.js';
import type { FloatGpuTensorInput, GpuAttentionResult, GpuBatch, GpuOutTensor, GpuTensorInput as GpuTensorOnly, HalfGpuTensorInput, OrtGpuTensorInput } from './types/gpu_tensors.js';

/** A GPU input of forward(): this package's form or onnxruntime-web's. */
type GpuTensorInput = GpuTensorOnly | OrtGpuTensorInput;
/** A GPU input whose call's 'cpu' results are float32. */
type FloatGpuInput = FloatGpuTensorInput | OrtGpuTensorInput;


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
   * recorded, in one queue.submit() (docs/webgpu/steps.md).
   */
  batch?: GpuBatch;
  /**
   * The array the output is written into, returned as output.data: a Float32Array (a Uint16Array
   * for 16-bit inputs) of exactly the output's elements, so that a loop of calls makes no new
   * output array per call. It may be an input's own array (the inputs are read first). Written
   * before the promise resolves. Detached or shrunk while the call waited: a ShapeError naming
   * `out` (a call with a cache on WASM then appends nothing; one on the GPU has appended). With
   * output 'gpu-buffer': a GpuOutTensor, the place in your own GPUBuffer the output is copied
   * into (no buffer made per call; docs/webgpu/tensors.md).
   */
  out?: Float32Array | Uint16Array | GpuOutTensor;
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

export interface ScaledDotProductAttentionOptions {
  /** [L, S] or [..., L, S]. */
  attnMask?: Mask;
  isCausal?: boolean;
  /** Default 1 / sqrt(dk). */
  scale?: number;
  needWeights?: boolean;
  /** As forward()'s `out`: the array (or, with output 'gpu-buffer', the GPU place) the output [..., L, dv] is written into. */
  out?: Float32Array | Uint16Array | GpuOutTensor;
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

/** Which module and features this engine uses (loads the core if needed). */
export function capabilities(): Promise<Capabilities>;

/** Resolves once the WASM core is loaded (optional: every call loads it on demand; under Node it starts loading at import). */
export function ready(): Promise<void>;

/** Resolves to the WebGPU kernel variants' names, per family. */
export function gpuKernelVariants(): Promise<GpuKernelVariants>;
