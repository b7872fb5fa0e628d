// What MultiHeadAttention.create() and createCache() take, and the config they resolve to
// (re-exported by web/index.d.ts; tests/js/module_config.test.js holds them to module_config.js).
import type { ActivationsDtype, CacheDtype, TensorInput, WeightsDtype } from './tensors.js';

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
   * no allowed key then gives zero output and zero weights. A +Infinity logit is a StateDictError
   * at loadStateDict(); -Infinity is no sink. Default false.
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
   * start once the first such call, which runs on the calling thread, has returned). No
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
   * The shapes of the calls to come (S defaults to L, batchSize to 1): create() makes their GPU
   * buffers and pipelines, so that the first such call creates none (self-attention where S = L,
   * else key and value one array). Backend 'webgpu', or 'auto' (which then asks for the GPU at
   * create() where such a call would run there); OptionError with backend 'wasm'.
   */
  expect?: { L: number; S?: number; batchSize?: number };
  /**
   * false: the weights live on the GPU only (backend 'webgpu', one thread): each load is checked
   * and quantised as usual, uploaded, then freed from WASM memory. A call that would run on WASM
   * (a NaN or an infinity in view, a call that does not fit the device, a lost device) is then a
   * typed error, as are headBilinearForm() and a load of non-finite weights. Default true.
   */
  hostWeights?: boolean;
  /**
   * The arithmetic the GPU's projections and flash attention may use (default 'float32').
   * 'float16': where the device has 'shader-f16', float16-arithmetic linear and flash kernels join
   * the candidates the selection times, each checked on the device against the float32 default
   * first (docs/webgpu/kernels.md): their inputs rounded to float16, so values beyond ±65504
   * overflow; attention's softmax stays float32. Elsewhere it warns once and runs
   * float32 (gpuProfile().precision). Backend 'webgpu' or 'auto'; OptionError with backend 'wasm'.
   */
  gpuPrecision?: 'float32' | 'float16';
  /**
   * How the weight matrices are stored (default 'float32'): 'float16' / 'bfloat16' (float32
   * weights rounded to nearest-even, 16-bit ones of the same kind kept as given), 'int8'
   * (llama.cpp's q8_0: one float32 scale per block of 32 along the input dimension), 'int4'
   * (llama.cpp's q4_0 rule: codes 0–15 and a float32 scale per block of 32, zero point 8; about 5
   * bits per weight, on WASM and WebGPU alike). The module
   * computes what the float32 module computes with the weights as stored.
   */
  weightsDtype?: WeightsDtype;
  /**
   * The projections' inputs (default 'float32': exact on the stored weights). 'int8' (weightsDtype
   * 'int8' or 'int4' only, else an OptionError naming `activations`): each input row quantised per
   * block of 32 by llama.cpp's q8_0 rule (d = max|x| / 127, q = round(x / d)), each block's dot
   * product with the weight codes in int32 (docs/attention-math.md), on every backend (WebGPU:
   * dot4I8Packed where WGSL has it).
   */
  activations?: ActivationsDtype;
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
  extends Required<Omit<MultiHeadAttentionOptions, 'threads' | 'backend' | 'gpu' | 'webgpuMinFlops' | 'expect' | 'hostWeights' | 'gpuPrecision' | 'rotary' | 'bias' | 'softcap' | 'qkNorm'>> {
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
