// WebGPU kernel variants (docs/webgpu.md): pinned with configure({ gpuKernels }), else chosen by
// measurement on the device.
/** Variant names per kernel family. */
export interface GpuKernelVariants { linear: string[]; attention: string[]; decode: string[]; q8linear: string[]; q8rows: string[] }
/** A variant name per family to pin (see gpuKernelVariants()). */
/** q8linear, q8rows: the projections and row quantisers of a module with activations 'int8' (in place of linear). */
export interface GpuKernelPins { linear?: string | null; attention?: string | null; decode?: string | null; q8linear?: string | null; q8rows?: string | null }
/** One shape class of the selection: chosen is null while its candidates are still measured. */
export interface GpuKernelClass {
  family: 'linear' | 'attention' | 'decode' | 'q8linear' | 'q8rows';
  shapeClass: string;
  chosen: string | null;
  medianMs: Record<string, number | null>;
  runs: Record<string, number>;
}
/** A candidate dropped on a device: its results were further from its reference's than its tolerance. */
export interface GpuRejectedVariant {
  kernel: 'linear' | 'attention' | 'decode' | 'q8linear' | 'q8rows';
  variant: string;
  shapeClass: string;
  /** null for a variant that did not compile on this device. */
  maxAbsDiff: number | null;
  tolerance: number | null;
  /** The compiler's message, for a variant that did not compile. */
  error?: string;
}
/**
 * The FLOPs from which a call runs on the GPU: 'auto' without webgpuMinFlops measures it once per
 * device on its first calls near it (each such call runs on WASM and on the GPU, timed: samples);
 * measured is true once that is done. A module with its own threshold reports it, measured false.
 */
export interface GpuAutoThreshold {
  flops: number;
  measured: boolean;
  samples: { flops: number; cpuMs: number; gpuMs: number }[];
}
export interface GpuProfile {
  adapter: { vendor?: string; architecture?: string; device?: string; description?: string };
  /** false on a software adapter: the defaults run, nothing is measured. */
  measuring: boolean;
  timer: 'timestamp-query' | 'wall';
  /** The variants run before measurement; linear's second from linearLargeFromRows rows. */
  defaults: { linear: string[]; attention: string[]; decode: string[]; q8linear: string[]; q8rows: string[]; linearLargeFromRows: number };
  pinned: GpuKernelPins;
  classes: GpuKernelClass[];
  rejected: GpuRejectedVariant[];
  /** create()'s gpuPrecision, and whether its float16 variants are candidates on this device ('shader-f16'). */
  precision: { requested: 'float32' | 'float16'; float16: boolean };
  autoThreshold: GpuAutoThreshold;
  /** Bytes the module's per-call and staging buffers hold now (freed when later calls need far less). */
  bufferBytes: number;
}
