// Types of the checkpoints the package reads and writes (web/index.d.ts re-exports them): state
// dicts and their layouts, pre-quantised tensors (GGUF blocks, MatMulNBits), safetensors and GGUF
// files, and the Hugging Face config mapping behind MultiHeadAttention.fromConfig() / fromGguf().
import type { HalfTensor, HalfTensorInput, Tensor, TensorInput } from './tensors.js';
import type { MultiHeadAttentionOptions, RotaryOptions } from './module_options.js';

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
