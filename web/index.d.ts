// Types for the `webattention` package (hand-written: Emscripten 3.1.6 cannot emit them).
// The module names come from web/modules.json (scripts/gen_modules.mjs writes dist/modules.d.ts).
import type { WasmModuleName } from './dist/modules.js';

export type { WasmModuleName };

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

/** A 16-bit tensor as onnxruntime-web and transformers.js make it. */
export interface HalfDimsInput {
  data: Uint16Array;
  dims: readonly number[];
  type: HalfDtype;
}

/** A 16-bit tensor result: the inputs' kind, values rounded to nearest-even from float32. */
export interface HalfTensor {
  data: Uint16Array;
  shape: number[];
  dtype: HalfDtype;
}

/** What forward(), scaledDotProductAttention() and selfAttention() take: one dtype per call. */
export type FloatInput = TensorInput | HalfInput | HalfDimsInput;
export type HalfTensorInput = HalfInput | HalfDimsInput;

/** create()'s weightsDtype: how the weight matrices are stored (biases are float32). */
export type WeightsDtype = 'float32' | 'float16' | 'bfloat16' | 'int8';
/** createCache()'s dtype: how keys and values are stored. */
export type CacheDtype = 'float32' | 'float16' | 'int8';

export interface MultiHeadAttentionOptions {
  embedDim: number;
  numHeads: number;
  /** Key input width (default embedDim). */
  kdim?: number;
  /** Value input width (default embedDim). */
  vdim?: number;
  /**
   * Biases on the projections (default true: all four). An object gives each its own, an
   * omitted one having none: { q: true, k: true, v: true } is Qwen2's. Without all of q, k and v
   * the state dict has q_proj_bias, k_proj_bias, v_proj_bias for those that have one instead of
   * in_proj_bias.
   */
  bias?: boolean | ProjectionBias;
  /** Per-head query/key width d_k (default embedDim / numHeads). Give with valueHeadDim. */
  headDim?: number;
  /** Per-head value width d_v (default embedDim / numHeads). Give with headDim. */
  valueHeadDim?: number;
  /**
   * Key/value heads (grouped-query attention; default numHeads, 1 = multi-query): a divisor of
   * numHeads. Query head i reads K/V head floor(i / (numHeads / numKvHeads)). With fewer K/V
   * heads the state dict has separate q_proj_weight [numHeads·headDim, E], k_proj_weight
   * [numKvHeads·headDim, kdim], v_proj_weight [numKvHeads·valueHeadDim, vdim], in_proj_bias of
   * their three widths, out_proj.*. Runs on every backend, WebGPU included.
   */
  numKvHeads?: number;
  /** Rotary position embedding on every query and key head after its projection (and bias). */
  rotary?: RotaryOptions;
  /** The score scale, a finite number > 0 (default 1 / sqrt(headDim)); Gemma's query_pre_attn_scalar^-1/2. */
  scale?: number;
  /**
   * Logit softcapping (Gemma 2), a finite number > 0: score ← softcap · tanh(score / softcap),
   * after the scale and before the masks. Default: none.
   */
  softcap?: number;
  /**
   * Attention sinks (gpt-oss; zeros give onnxruntime's smooth softmax): a state-dict entry
   * `sinks` [numHeads], each head's logit in its softmax's denominator with no value. A row with
   * no allowed key then gives zero output and zero weights. Default false.
   */
  sinks?: boolean;
  /**
   * Qwen3 / Gemma 3's qk-norm: an RMSNorm of every query and key head after its projection (and
   * bias), before RoPE, x ← x / sqrt(mean(x²) + eps) · w, with state-dict entries q_norm.weight
   * and k_norm.weight [headDim] (Gemma 3 stores w − 1: add 1). eps default 1e-6. Default: none.
   */
  qkNorm?: { eps?: number };
  /**
   * Threads forward() computes on: 1 = the calling thread only; n > 1 = the calling thread plus
   * n − 1 workers, each with its own WASM instance, work split by batch × head, for every call;
   * 'auto' (default) = min(cores, 4), used for calls big enough to gain from it (the workers
   * start at the first such call, which runs on the calling thread while they do). No
   * SharedArrayBuffer or cross-origin isolation needed. In Node, WEBATTENTION_THREADS sets the
   * default.
   */
  threads?: 'auto' | number;
  /**
   * Where forward() computes. 'auto' (default): WebGPU for calls of at least webgpuMinFlops when
   * a hardware adapter is there, WASM otherwise (software adapters such as SwiftShader are left
   * alone unless webgpuMinFlops is given); the adapter is only asked for at the first such call. 'wasm': WASM only. 'webgpu': every call on the GPU;
   * create() rejects with BackendError when there is no WebGPU adapter or device. See
   * docs/webgpu.md.
   */
  backend?: 'auto' | 'wasm' | 'webgpu';
  /**
   * The WebGPU to use: navigator.gpu (the default in browsers), the npm `webgpu` package's
   * create([]) in Node (the package never imports one itself), or a GPUDevice the app has.
   */
  gpu?: GpuLike;
  /**
   * FLOPs from which a call runs on the GPU (default 2^26 for 'auto', an estimate; 0 for
   * 'webgpu'). Giving it also lets 'auto' use a software adapter.
   */
  webgpuMinFlops?: number;
  /**
   * How the weight matrices are stored (default 'float32'): 'float16' / 'bfloat16' (float32
   * weights rounded to nearest-even, 16-bit ones of the same kind kept as given), 'int8'
   * (llama.cpp's q8_0: one float32 scale per block of 32 along the input dimension). The module
   * computes what the float32 module computes with the weights as stored.
   */
  weightsDtype?: WeightsDtype;
}

/**
 * RoPE at absolute positions (with a cache: cache.length + i; without: 0…L−1 for queries, 0…S−1
 * for keys): θ_j = base^(−2j/dim) for j < dim/2; pairs (x_j, x_{j+dim/2}) (half-split,
 * GPT-NeoX / Llama) or, interleaved, (x_2j, x_2j+1) (GPT-J) turn by p·θ_j; features >= dim stay.
 */
export interface RotaryOptions {
  /** Default 10000; a finite number > 1 (the frequencies must fall with j). */
  base?: number;
  /** Default false (half-split). */
  interleaved?: boolean;
  /** Rotated features per head: even, <= headDim (default headDim). */
  dim?: number;
  /** Frequency scaling for contexts past the trained one (default none). */
  scaling?: RotaryScaling;
  /**
   * The angles given instead of base and scaling: cos and sin tensors [positions, dim / 2], row
   * p for position p (dim then 2 · their width, <= headDim). A call that rotates a position past
   * the last row throws ShapeError.
   */
  table?: { cos: TensorInput; sin: TensorInput };
}

/** The resolved rotary option (mha.config.rotary). */
export interface ResolvedRotary {
  /** null with a table. */
  base: number | null;
  interleaved: boolean;
  dim: number;
  scaling: RotaryScaling | null;
  /** The module's own copy of a given table. */
  table: { cos: Float32Array; sin: Float32Array; positions: number } | null;
}

/**
 * 'linear': every θ_j / factor. 'llama3' (Llama 3.1): wavelengths 2π/θ_j that fit the trained
 * context (originalMaxPositions, default 8192) highFreqFactor (default 4) times or more are
 * kept, those that fit fewer than lowFreqFactor (default 1) times are stretched by factor, and
 * those between are blended.
 */
export interface RotaryScaling {
  type: 'linear' | 'llama3';
  /** A finite number > 0. */
  factor: number;
  lowFreqFactor?: number;
  highFreqFactor?: number;
  originalMaxPositions?: number;
}

/** Which projections add a bias. */
export interface ProjectionBias {
  q?: boolean;
  k?: boolean;
  v?: boolean;
  out?: boolean;
}

/** navigator.gpu, the npm `webgpu` package's create([]), or a GPUDevice (typed structurally). */
export type GpuLike =
  | { requestAdapter(options?: any): Promise<unknown> }
  | { createBuffer(descriptor: any): unknown; readonly queue: unknown };

export interface ResolvedMultiHeadAttentionConfig
  extends Required<Omit<MultiHeadAttentionOptions, 'threads' | 'backend' | 'gpu' | 'webgpuMinFlops' | 'rotary' | 'bias' | 'softcap' | 'qkNorm'>> {
  rotary: ResolvedRotary | null;
  bias: Required<ProjectionBias>;
  /** null: none. */
  softcap: number | null;
  /** null: none. */
  qkNorm: { eps: number } | null;
}

export interface CacheOptions {
  /** Default 1. */
  batchSize?: number;
  /** Most positions the cache holds; appending past it throws CacheError. Required without window. */
  maxLength?: number;
  /**
   * Sliding window: the query at position p sees only keys at positions > p − window. Storage is
   * a ring of window + 63 positions, so without maxLength the length has no limit.
   */
  window?: number;
  /** How keys and values are stored (default 'float32'); 'int8': one float32 scale per (position, K/V head) row. */
  dtype?: CacheDtype;
}

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
  /** Positions appended so far, counting the calls made on it that still run (in order). */
  readonly length: number;
  readonly batchSize: number;
  /** 0: no limit (a window without maxLength). */
  readonly maxLength: number;
  /** 0: no window. */
  readonly window: number;
  readonly dtype: CacheDtype;
  /**
   * The keys (as stored: rotated) and values of the positions held, in position order: all of
   * them, or with a window the last min(length, window); after the calls made before it.
   * onnxruntime's present_key / present_value.
   */
  read(): Promise<CacheContents>;
  /** Back to length 0 without freeing, after the calls made before it. */
  reset(): void;
  /** Frees the storage once the calls made before it finish; later use throws DisposedError (as after the module's dispose()). */
  dispose(): void;
}

export interface ForwardOptions {
  /** [B, S] (or [S] unbatched). Uint8Array: nonzero = ignore that key. Float32Array: additive. */
  keyPaddingMask?: Mask;
  /** [L, S] or [B*numHeads, L, S]. Uint8Array: nonzero = not allowed. Float32Array: additive. */
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
   * refused. Calls with a cache run where the cache was made: on the GPU when the module used
   * WebGPU at createCache(), else on the calling thread's WASM.
   */
  cache?: KvCache;
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

/** Keys exactly as torch.nn.MultiheadAttention.state_dict(). */
export type StateDict =
  | Record<string, TensorInput | HalfTensorInput | Float32Array>
  | Map<string, TensorInput | HalfTensorInput | Float32Array>;

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
   */
  layout?: 'torch' | 'hf' | 'gpt2' | 'bert';
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
  readonly config: ResolvedMultiHeadAttentionConfig;
  /**
   * 'webgpu' (with backend 'auto', calls under webgpuMinFlops still run on WASM) or 'wasm'
   * (also with 'auto' before its first call of at least webgpuMinFlops, and after the WebGPU
   * device was lost: the module then carries on on WASM).
   */
  readonly backend: 'wasm' | 'webgpu';
  /** What the WebGPU kernel selection measured and chose on this module's device; null without a GPU in use. */
  gpuProfile(): GpuProfile | null;
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
  forward(query: HalfTensorInput, key: HalfTensorInput, value: HalfTensorInput, options?: ForwardOptions): Promise<HalfAttentionResult>;
  forward(query: TensorInput, key: TensorInput, value: TensorInput, options: ForwardOptions & { needWeights: true }): Promise<AttentionResultWithWeights>;
  forward(query: TensorInput, key: TensorInput, value: TensorInput, options?: ForwardOptions & { needWeights?: false }): Promise<AttentionResultWithoutWeights>;
  forward(query: TensorInput, key: TensorInput, value: TensorInput, options?: ForwardOptions): Promise<AttentionResult>;
  /**
   * docs/attention-math.md §5: head `head`'s W_i = W_i^Q W_i^Kᵀ ([embedDim, kdim]; scores are
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
}

/** softmax(q kᵀ · scale + attnMask) v for q [..., L, dk], k [..., S, dk], v [..., S, dv]. */
export function scaledDotProductAttention(
  q: HalfTensorInput, k: HalfTensorInput, v: HalfTensorInput, options?: ScaledDotProductAttentionOptions,
): Promise<HalfAttentionResult>;
export function scaledDotProductAttention(
  q: TensorInput, k: TensorInput, v: TensorInput, options: ScaledDotProductAttentionOptions & { needWeights: true },
): Promise<AttentionResultWithWeights>;
export function scaledDotProductAttention(
  q: TensorInput, k: TensorInput, v: TensorInput, options?: ScaledDotProductAttentionOptions & { needWeights?: false },
): Promise<AttentionResultWithoutWeights>;
export function scaledDotProductAttention(
  q: TensorInput, k: TensorInput, v: TensorInput, options?: ScaledDotProductAttentionOptions,
): Promise<AttentionResult>;

export interface SelfAttentionOptions {
  /** Return the attention probabilities [..., L, L] (default false). */
  needWeights?: boolean;
  /** @deprecated The old name of needWeights (a console warning says so once). */
  returnWeights?: boolean;
}

/** softmax(x xᵀ / sqrt(C)) x for x [L, C] or [..., L, C] (Q = K = V = x). */
export function selfAttention(x: HalfTensorInput, options?: SelfAttentionOptions): Promise<HalfAttentionResult>;
export function selfAttention(x: TensorInput, options: SelfAttentionOptions & ({ needWeights: true } | { returnWeights: true })): Promise<AttentionResultWithWeights>;
export function selfAttention(x: TensorInput, options?: SelfAttentionOptions & { needWeights?: false; returnWeights?: false }): Promise<AttentionResultWithoutWeights>;
export function selfAttention(x: TensorInput, options?: SelfAttentionOptions): Promise<AttentionResult>;

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
   * pages (served as is or bundled). 'relaxed': SIMD128 with relaxed-SIMD multiply-add,
   * where the engine validates it; 'mt-relaxed' both. 'scalar': engines without WASM SIMD.
   */
  wasmModule: WasmModuleName;
  /** Threads a module created without the `threads` option uses (at most). */
  threads: number;
}

/**
 * The tensors of a .safetensors file (F32, F16 or BF16; every other dtype is refused), checked
 * as strictly as the reference implementation checks them: a broken file is a SafetensorsError
 * naming the problem. Aligned F32 data is a view on `bytes`, everything else a copy.
 */
export function loadSafetensors(bytes: ArrayBufferLike | ArrayBufferView, options?: { convert?: true }): SafetensorsFile;
/** convert: false: F16 and BF16 tensors keep their bits (views on `bytes` where 2-byte aligned). */
export function loadSafetensors(bytes: ArrayBufferLike | ArrayBufferView, options: { convert: boolean }): SafetensorsFile<SafetensorsTensor | SafetensorsHalfTensor>;

/** Which module and features this engine uses (loads the core if needed). */
export function capabilities(): Promise<Capabilities>;

/** Resolves once the WASM core is loaded (optional: every call loads it on demand). */
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
/**
 * A file of the package could not be fetched or is not what it should be (HTML served instead
 * of the .wasm: Vite's dev server without optimizeDeps.exclude); the message names the URL and
 * the fix (optimizeDeps.exclude, the URL, configure({ wasmPaths })).
 */
export class LoadError extends WebAttentionError {}

// WebGPU kernel variants (docs/webgpu.md): pinned with configure({ gpuKernels }), else chosen by
// measurement on the device.
/** Variant names per kernel family. */
export interface GpuKernelVariants { linear: string[]; attention: string[]; decode: string[] }
/** A variant name per family to pin (see gpuKernelVariants()). */
export interface GpuKernelPins { linear?: string | null; attention?: string | null; decode?: string | null }
/** One shape class of the selection: chosen is null while its candidates are still measured. */
export interface GpuKernelClass {
  family: 'linear' | 'attention' | 'decode';
  shapeClass: string;
  chosen: string | null;
  medianMs: Record<string, number | null>;
  runs: Record<string, number>;
}
export interface GpuProfile {
  adapter: { vendor?: string; architecture?: string; device?: string; description?: string };
  /** false on a software adapter: the defaults run, nothing is measured. */
  measuring: boolean;
  timer: 'timestamp-query' | 'wall';
  /** The variants run before measurement; linear's second from linearLargeFromRows rows. */
  defaults: { linear: string[]; attention: string[]; decode: string[]; linearLargeFromRows: number };
  pinned: GpuKernelPins;
  classes: GpuKernelClass[];
}
/** Resolves to the WebGPU kernel variants' names, per family. */
export function gpuKernelVariants(): Promise<GpuKernelVariants>;
