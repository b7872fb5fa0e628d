// GPU-resident tensors (README, "Tensors on the GPU"): forward()'s inputs as GPUBuffers and its
// results with output: 'gpu-buffer'. Typed structurally: no WebGPU type package is needed.

/** A GPUBuffer as the package reads it. */
export interface GpuBufferLike {
  readonly size: number;
  /** GPUBufferUsage flags: an input needs STORAGE (bound as it is) or COPY_SRC (copied on the device). */
  readonly usage: number;
  readonly mapState?: string;
  destroy(): void;
  mapAsync(mode: number, offset?: number, size?: number): Promise<void>;
}

/**
 * forward()'s query, key or value on the GPU: float32 or float16, row-major, from byte 0 of a buffer on the
 * module's device (pass your GPUDevice as create()'s `gpu`, or use mha.gpuDevice), unmapped, with
 * STORAGE or COPY_SRC usage. Read
 * when the call's work is submitted: leave it unchanged until the call settles.
 */
export interface GpuTensorInput {
  gpuBuffer: GpuBufferLike;
  shape: readonly number[];
  /**
   * float32 (the default), or float16 bits widened on the device, exactly: the buffer then holds
   * at least ceil(n / 2) · 4 bytes for n elements (whole 4-byte words). bfloat16 goes through the
   * host as Uint16Array tensors. A call's inputs share one dtype; float16 ones give float16
   * results ('cpu' and 'gpu-buffer' alike).
   */
  dtype?: 'float32' | 'float16';
  /**
   * Where the elements start in the buffer, in bytes (default 0): a multiple of 4. A tensor not at
   * byte 0 is copied from there on the device, so its buffer needs COPY_SRC usage.
   */
  byteOffset?: number;
}

/** A float16 GPU input: its call's 'cpu' results are float16 (HalfAttentionResult). */
export type HalfGpuTensorInput = GpuTensorInput & { dtype: 'float16' };
/** A float32 GPU input (dtype absent or 'float32'). */
export type FloatGpuTensorInput = GpuTensorInput & { dtype?: 'float32' };

/** onnxruntime-web's GPU tensor (Tensor.fromGpuBuffer()) as forward() takes it. */
export interface OrtGpuTensorInput {
  location: 'gpu-buffer';
  gpuBuffer: GpuBufferLike;
  dims: readonly number[];
  type: 'float32';
}

/**
 * A result of forward(..., { output: 'gpu-buffer' }): a buffer the caller owns, float32, or
 * float16 bits (two to a 4-byte word) for a float16 call's.
 */
export interface GpuTensor<D extends 'float32' | 'float16' = 'float32'> extends GpuTensorInput {
  readonly gpuBuffer: GpuBufferLike;
  readonly shape: number[];
  readonly dtype: D;
  /** The values, copied back: float32 values, or float16 bits (DisposedError after dispose()). */
  read(): Promise<D extends 'float16' ? Uint16Array : Float32Array>;
  /** Where the elements start in gpuBuffer, in bytes (0 unless the call had an `out`). */
  readonly byteOffset: number;
  /** Destroys the buffer (a call's `out`: leaves it alone); again: nothing. */
  dispose(): void;
}

/**
 * forward()'s `out` with output 'gpu-buffer': the place in a buffer of the caller's (COPY_DST
 * usage, unmapped, on the module's device) that the output is copied into on the device, from
 * byteOffset (a multiple of 4), instead of a buffer made for it. shape, when given, has the output's
 * elements; dtype, when given, is the result's. The result's GpuTensor is that place: its
 * dispose() leaves the buffer alone.
 */
export interface GpuOutTensor {
  gpuBuffer: GpuBufferLike;
  shape?: readonly number[];
  dtype?: 'float32' | 'float16';
  byteOffset?: number;
}

/** forward()'s result with output: 'gpu-buffer' (D: 'float16' for a float16 call, else 'float32'). */
export interface GpuAttentionResult<D extends 'float32' | 'float16' = 'float32'> {
  output: GpuTensor<D>;
  /** Present when weights were asked for, else null. */
  attnWeights: GpuTensor<D> | null;
}

/**
 * Records forward() calls (`{ output: 'gpu-buffer', batch }`) of modules on one GPUDevice into one
 * command buffer, submitted by submit(): a decode step through a stack of layers is one
 * queue.submit(). A batched forward() resolves once its work is encoded; its results hold their
 * values from the submit on (read() submits first when need be; dispose() destroys after it). The
 * package's own work outside the batch on its modules, caches or results submits it first; the
 * caller's own passes do not: record them with encode(), or submit() before reading results there. A cached step longer than a
 * windowed cache's pass submits what the batch holds and then its own passes, and stays the
 * batch's call (a refused submit destroys its results and puts its cache back).
 */
export class GpuBatch {
  constructor();
  /** Calls (forward() and encode()) recorded and not yet submitted. */
  readonly pending: number;
  /**
   * Records the caller's own GPU work between the batch's calls, in the same queue.submit(): fn
   * encodes passes and copies on a new command encoder of `device` (a webattention module's
   * GPUDevice, the batch's), synchronously, without ending it; the batch finishes it. Returns what
   * fn returned. OptionError naming `device` or `fn` (not a module's device, another device than
   * the batch's, not a function, a promise returned, a nested encode()); a throw from fn is
   * rethrown; either records nothing. Work WebGPU refuses rejects submit() naming the call and `fn`.
   * queue.writeBuffer() from fn takes effect before the whole batch runs.
   */
  encode<Encoder, T>(device: { createCommandEncoder(descriptor?: any): Encoder }, fn: (encoder: Encoder) => T): T;
  /**
   * Submits the recorded calls (one queue.submit(); one more per module called twice) and resolves
   * once WebGPU validated them. A BackendError naming the call ("call N of the batch") and its
   * argument when WebGPU refused the work (a GPU input destroyed meanwhile): its results are then
   * destroyed and its caches back to their lengths before it. Nothing recorded since a submit the
   * package made for work outside the batch (a read() of a result, a call on its cache): settles as
   * that submit did.
   */
  submit(): Promise<void>;
}

/**
 * A GpuBatch that keeps the calls of its first step (those made into it before its first
 * submit()), so that each later token runs them again with replay() instead of making them: the
 * same calls at each cache's length now (its caches one step on), bit for bit, in one
 * queue.submit(), for less of the host's time than a batched step (about 0.3–0.4× on SwiftShader's Dawn: each call's encoding is played again, not made, in one compute pass with one uniform write). Its forward() calls take GPU inputs
 * and an `out` place (fixed buffers: the input written before each replay, the output read
 * after), no masks, positionIds or needWeights (else an OptionError naming `batch` at the call);
 * its encode() fns are called again. After the first submit() it takes no other calls (OptionError
 * naming `batch`).
 */
export class GpuStep extends GpuBatch {
  constructor();
  /**
   * The kept calls again, one queue.submit(); resolves once WebGPU validated them. OptionError
   * naming `batch` (still recording, or a kept call that cannot be replayed), CacheError naming
   * `cache` (no room, rows at several lengths), ShapeError naming `rotary.table` (past a given
   * table's rows), DisposedError (a disposed cache or module): nothing
   * recorded. A throw from an encode() fn is rethrown, and a refused submit rejects as submit()
   * does; the caches are then back at their lengths before. Waits for the step's last submit to
   * settle first. The step holds its calls' modules (not collected while it lives).
   */
  replay(): Promise<void>;
  /**
   * Destroys the step's uniform buffers and forgets its calls. A recording not yet submitted is
   * dropped (its caches back); a replay() under way rejects with a DisposedError before its submit;
   * work already submitted runs. Then replay() and calls into the step are DisposedErrors naming
   * `batch`. The modules, caches and `out` places are the caller's and stay usable.
   */
  dispose(): void;
}
