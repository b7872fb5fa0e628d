// Every choice of WebGPU kernel in one place: which kernel family a call takes (flash or decode),
// the variants of each family (what kernel_variants.js builds), the default variant of each, and
// how many timed runs the selection (kernel_selection.js) gives a candidate. No WGSL here: this
// file is light enough for configure() to check variant names against.

/**
 * On the GPU, query lengths up to this take the decode kernels (split-K over keys) instead of the
 * flash kernel: flash puts one query row on each of a workgroup's 64 invocations and walks the
 * keys serially, so at L <= 4 at least 60 of 64 invocations idle; the decode path spreads a row's
 * keys over S / 256 workgroups. Its cost is per row (each row re-reads K and V), so it stops at a
 * few rows.
 */
export const DECODE_MAX_L = 4;

/**
 * The linear (Y = X·Wᵀ + b) variants: kernel 'tile64' is linear.wgsl.js (64×64 tile, 4×4 per
 * invocation, BK 16, scalar loads); 'tiled' is linear_tiled.wgsl.js with a tile of
 * 64·im × 64·in outputs ((4·im)×(4·in) per invocation) and K slices of bk; the names ending in
 * 'p' load the next K slice into registers while the current one is multiplied (prefetch).
 */
export const LINEAR_VARIANTS = {
  tile64: { kernel: 'tile64' },
  r64x64k16: { kernel: 'tiled', im: 1, in: 1, bk: 16 },
  r64x128k16: { kernel: 'tiled', im: 1, in: 2, bk: 16 },
  r128x64k16: { kernel: 'tiled', im: 2, in: 1, bk: 16 },
  r128x128k8: { kernel: 'tiled', im: 2, in: 2, bk: 8 },
  r128x128k16: { kernel: 'tiled', im: 2, in: 2, bk: 16 },
  r128x128k32: { kernel: 'tiled', im: 2, in: 2, bk: 32 },
  r64x128k16p: { kernel: 'tiled', im: 1, in: 2, bk: 16, prefetch: true },
  r128x128k8p: { kernel: 'tiled', im: 2, in: 2, bk: 8, prefetch: true },
  r128x128k16p: { kernel: 'tiled', im: 2, in: 2, bk: 16, prefetch: true },
};

/**
 * The flash attention variants (L > DECODE_MAX_L): kernel 'row' is flash_attention.wgsl.js (one
 * query row per invocation); 'tiled' is flash_tiled.wgsl.js (64 rows × bc keys per workgroup of
 * 256 as register-blocked mini-GEMMs; qShared false: Q read from global memory, for wide heads
 * whose Q tile would not fit workgroup memory); 'quad' is flash_quad.wgsl.js (64 × 64, vec4
 * reads; needs 48 KiB of workgroup memory at d = 64).
 */
export const ATTENTION_VARIANTS = {
  row: { kernel: 'row' },
  tile64x16: { kernel: 'tiled', bc: 16 },
  tile64x32: { kernel: 'tiled', bc: 32 },
  wide64x16: { kernel: 'tiled', bc: 16, qShared: false },
  quad64: { kernel: 'quad' },
};

/** The decode path's variants (L <= DECODE_MAX_L): split-K over chunks of `chunk` keys. */
export const DECODE_VARIANTS = {
  split256: { chunk: 256 },
};

/**
 * The variant each family uses before (or without) measurement: today's kernels, which every
 * test and the PyTorch oracle have run; not yet timed against the others on hardware.
 */
export const DEFAULT_VARIANTS = { linear: 'tile64', attention: 'row', decode: 'split256' };

/** The variant names of each family ({ linear, attention, decode }: string[]). */
export const variantNames = () => ({
  linear: Object.keys(LINEAR_VARIANTS),
  attention: Object.keys(ATTENTION_VARIANTS),
  decode: Object.keys(DECODE_VARIANTS),
});

/**
 * Timed runs per candidate before a shape class's choice is made: the median of 3 shrugs off one
 * slow run (a first dispatch that warms caches, another module's work on the queue).
 */
export const SELECTION_RUNS = 3;
