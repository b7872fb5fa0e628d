// The WebGPU kernel catalogue and its constants: up to which query length a call takes the decode
// kernels (DECODE_MAX_L; attention_path.js's attentionPath() is the one function that decides
// flash or decode), the variants of each family (what ../programs.js builds into descriptors),
// the default variant of each, and how many timed runs the selection (kernel_selection.js) gives a
// candidate. No WGSL here: this file is light enough for configure() to check variant names
// against.

/**
 * On the GPU, query lengths up to this take the decode kernels (split-K over keys) instead of the
 * flash kernel: flash puts one query row on each of a workgroup's 64 invocations and walks the
 * keys serially, so at L <= 4 at least 60 of 64 invocations idle; the decode path spreads a row's
 * keys over S / 256 workgroups. Its cost is per row (each row re-reads K and V), so it stops at a
 * few rows.
 */
export const DECODE_MAX_L = 4;

/**
 * How far a float16-arithmetic variant may be from its float32 reference, as DEFAULT_TOLERANCE
 * (below) reads it. X and W rounded to f16 (2^-11 relative each) and sums of 16 products in f16:
 * with that rounding emulated on SwiftShader (the variants' 'f16-rounded' twins,
 * node_half_precision.test.mjs), a module's output was 9.7e-5 (E 256) and 1.3e-4 (E 1024) of
 * max(1, max |output|) from WASM's float32 through a linear variant, and 4.2e-5 to 1.1e-3 through a
 * flash variant at d = 64 (the larger with scores of a few units: a score's f16 error grows with
 * it, and exp() turns that into a relative error of p); a wrong index or a missed tile is off by
 * the size of the output itself.
 */
export const HALF_TOLERANCE = 1e-2;

// A variant's catalogue fields for float16 arithmetic: module option gpuPrecision 'float16' and
// the device feature 'shader-f16'.
function halfArithmetic() {
  return { halfType: 'f16', precision: 'float16', features: ['shader-f16'], tolerance: HALF_TOLERANCE };
}

/** create()'s gpuPrecision values: what arithmetic the GPU's projections and attention may use. */
export const GPU_PRECISIONS = ['float32', 'float16'];

/**
 * The linear (Y = X·Wᵀ + b) variants: kernel 'tile64' is linear.wgsl.js (64×64 tile, 4×4 per
 * invocation, BK 16, scalar loads); 'tiled' is linear_tiled.wgsl.js with a tile of
 * 64·im × 64·in outputs ((4·im)×(4·in) per invocation) and K slices of bk; the names ending in
 * 'p' load the next K slice into registers while the current one is multiplied (prefetch). On the
 * H100, prefetch helped only at BK 8 (r64x128k16p and r128x128k16p were dropped: never faster
 * than their plain twins). 'rows8' is linear_rows.wgsl.js: 8 columns of Y per workgroup, K split
over 32 invocations per column, for a decode step's few rows (`maxRows`: a candidate only for
calls whose largest projection has at most DECODE_MAX_L rows; pinned, it runs any call);
'rows8sg' meets a column's 32 partial sums by subgroup shuffles instead of a 5-barrier tree
(only where the device has 'subgroups'; the sums in another order, so the default tolerance).
'h64x64k16' and 'h128x128k16' are r64x64k16 and r128x128k16 with float16 arithmetic (`halfType`): X and W staged in
workgroup memory as f16, each K slice's products summed in f16 and added to float32 sums
(linear_tiled.wgsl.js). They are candidates only for modules created with gpuPrecision 'float16'
(`precision`) on devices with 'shader-f16', and are held to HALF_TOLERANCE.
 */
export const LINEAR_VARIANTS = {
  tile64: { kernel: 'tile64' },
  r64x64k16: { kernel: 'tiled', im: 1, in: 1, bk: 16 },
  r64x128k16: { kernel: 'tiled', im: 1, in: 2, bk: 16 },
  r128x64k16: { kernel: 'tiled', im: 2, in: 1, bk: 16 },
  r128x128k8: { kernel: 'tiled', im: 2, in: 2, bk: 8 },
  r128x128k16: { kernel: 'tiled', im: 2, in: 2, bk: 16 },
  r128x128k32: { kernel: 'tiled', im: 2, in: 2, bk: 32 },
  r128x128k8p: { kernel: 'tiled', im: 2, in: 2, bk: 8, prefetch: true },
  rows8: { kernel: 'rows', maxRows: DECODE_MAX_L },
  rows8sg: { kernel: 'rows', maxRows: DECODE_MAX_L, subgroups: true, features: ['subgroups'] },
  h64x64k16: { kernel: 'tiled', im: 1, in: 1, bk: 16, ...halfArithmetic() },
  h128x128k16: { kernel: 'tiled', im: 2, in: 2, bk: 16, ...halfArithmetic() },
};

/**
 * The flash attention variants (L > DECODE_MAX_L): kernel 'row' is flash_attention.wgsl.js (one
 * query row per invocation); 'tiled' is flash_tiled.wgsl.js (64 rows × bc keys per workgroup of
 * 256 as register-blocked mini-GEMMs; qShared false: Q read from global memory, for wide heads
 * whose Q tile would not fit workgroup memory; dot: the scores as dot products of vec4s over the
 * features, Q and K staged that way; lean: K, V, scores and p in arrays of their own, three
 * barriers per key tile instead of five; subgroups: each tile's row max by subgroup shuffles of
 * the invocations' own scores instead of BC reads of the score tile, the same value, only where
 * the device has 'subgroups': sg64x16, sglean64x16 and sgdot64x16, twins of tile64x16, lean64x16
 * and dot64x16); 'quad' is flash_quad.wgsl.js (64 × 64, vec4 reads; needs 48 KiB
 * of workgroup memory at d = 64); 'oct' is flash_oct.wgsl.js (64 rows × 32 keys, 8 × 4 scores
 * and 8 rows × 8 columns of P·V per invocation of 64; 34 KiB at d = 64). 'h64x16' and 'hdot64x16' are tile64x16 and dot64x16 with
 * float16 arithmetic (`halfType`): Q, K and V staged in workgroup memory as f16, each slice of 16
 * features of a score summed in f16 and added to a float32 score, p·V of each key tile summed in
 * f16 and added to float32 accumulators; the softmax (max, exp, row sums) stays float32. Offered
 * as the float16 linear variants are (`precision`, 'shader-f16'), held to HALF_TOLERANCE.
 */
export const ATTENTION_VARIANTS = {
  row: { kernel: 'row' },
  tile64x16: { kernel: 'tiled', bc: 16 },
  tile64x32: { kernel: 'tiled', bc: 32 },
  dot64x16: { kernel: 'tiled', bc: 16, dot: true },
  lean64x16: { kernel: 'tiled', bc: 16, lean: true },
  lean64x32: { kernel: 'tiled', bc: 32, lean: true },
  dotlean64x16: { kernel: 'tiled', bc: 16, dot: true, lean: true },
  wide64x16: { kernel: 'tiled', bc: 16, qShared: false },
  quad64: { kernel: 'quad' },
  oct64x32: { kernel: 'oct' },
  sg64x16: { kernel: 'tiled', bc: 16, subgroups: true, features: ['subgroups'] },
  sglean64x16: { kernel: 'tiled', bc: 16, lean: true, subgroups: true, features: ['subgroups'] },
  sgdot64x16: { kernel: 'tiled', bc: 16, dot: true, subgroups: true, features: ['subgroups'] },
  h64x16: { kernel: 'tiled', bc: 16, ...halfArithmetic() },
  hdot64x16: { kernel: 'tiled', bc: 16, dot: true, ...halfArithmetic() },
};

/**
 * The decode path's variants (L <= DECODE_MAX_L): split-K over chunks of `chunk` keys, one
 * workgroup of 64 a chunk. Smaller chunks give a short cache more workgroups (a cache of 512
 * keys is 2 chunks of 256 per head, 8 of 64) at the cost of more partials to combine; larger ones
 * give a long cache fewer (a cache of 32768 keys is 128 chunks of 256 per head, 32 of 1024) and
 * each invocation more keys. Which wins depends on the GPU, the heads and the cache: the
 * selection times them (each variant's fits() checks its own scratch and grid). subgroups:
 * the chunk's max and sum by subgroup operations (decode_partial.wgsl.js, subgroup_reduce.wgsl.js;
 * 3 barriers a chunk instead of 16), for any subgroup size, only where the device has the 'subgroups'
 * feature (`features`: what a variant needs, programs.js's fittingVariants()). Its sums differ from
 * split256's only in their order, so the default tolerance holds; the max is the same value.
 */
export const DECODE_VARIANTS = {
  split256: { chunk: 256 },
  split64: { chunk: 64 },
  split1024: { chunk: 1024 },
  split256sg: { chunk: 256, subgroups: true, features: ['subgroups'] },
};

/**
 * The linear variants of a module with activations 'int8' (its projections: the rows quantised,
 * then an integer product; q8_projection.js): 'q8tile16' is q8_linear.wgsl.js (one output per
 * invocation, 16 × 16 a workgroup); 'tiled' is q8_tiled.wgsl.js, a (16·rm) × (16·rn) tile with
 * rm · rn outputs per invocation, a candidate only for calls whose largest projection has more
 * than DECODE_MAX_L rows (`minRows`: a decode step's one-row products would leave most of its
 * tile idle); 'split' is q8_split.wgsl.js, 8 columns of Y per workgroup with a column's blocks
split over 32 invocations, a candidate only for calls of at most DECODE_MAX_L rows (`maxRows`).
All give the same bits (q8_common.wgsl.js): the default tolerance holds with room.
 */
export const Q8_LINEAR_VARIANTS = {
  q8tile16: { kernel: 'tile16' },
  q8r64x64: { kernel: 'tiled', rm: 4, rn: 4, minRows: DECODE_MAX_L + 1 },
  q8r128x128: { kernel: 'tiled', rm: 8, rn: 8, minRows: DECODE_MAX_L + 1 },
  q8split8: { kernel: 'split', maxRows: DECODE_MAX_L },
};

/**
 * The row quantisers of a module with activations 'int8' (q8_rows.wgsl.js, before each
 * projection): the block's max |x| by a workgroup-memory tree ('tree32') or by subgroup operations
 * ('sg32', subgroup_reduce.wgsl.js; only where the device has 'subgroups'). A max is exact in any
 * order, so both give the same codes and scales, bit for bit, on any subgroup size.
 */
export const Q8_ROWS_VARIANTS = {
  tree32: {},
  sg32: { subgroups: true, features: ['subgroups'] },
};

/**
 * The variants each family runs before (or without) measurement, as measured on an NVIDIA H100
 * (Dawn/Vulkan, bench/gpu/gpu.mjs; docs/webgpu.md has the table): linear r64x64k16
 * below LINEAR_LARGE_ROWS rows (fastest, or within 10% of the fastest, at 128–2048 rows;
 * 1.7–1.8× tile64) and r128x128k8p from there (fastest at 4096 and 16384 rows: 37–39 TFLOP/s,
 * 2.6–2.9× tile64); attention tile64x16 (fastest without a mask at every L from 1024, within 7%
 * of quad64 with causal at L = 1024, 2.4–3.1× row; 18% behind quad64 at L = 128). Where a
 * default does not fit the device (tile64x16 needs 24 KiB of workgroup memory at d = 64),
 * DEFAULT_FALLBACKS, else the catalogue's first variant that fits, runs.
 */
export const DEFAULT_VARIANTS = {
  linear: ['r64x64k16', 'r128x128k8p'],  // [below LINEAR_LARGE_ROWS rows, from there]
  attention: ['tile64x16'],
  decode: ['split256'],
  q8linear: ['q8tile16'],
  q8rows: ['tree32'],
};

/** Rows (the call's largest projection) from which the linear default is the large one. */
export const LINEAR_LARGE_ROWS = 4096;

/** The default variant of `family` for a call whose largest projection has `rows` rows. */
export function defaultVariant(family, rows) {
  const [small, large = small] = DEFAULT_VARIANTS[family];
  return rows >= LINEAR_LARGE_ROWS ? large : small;
}

/**
 * Where a family's default does not fit the device, the next of these that does: wide64x16 (8 KiB
 * of workgroup memory at d = 64) ran 1.15–1.65× faster than row on the H100 at every shape.
 */
export const DEFAULT_FALLBACKS = { attention: ['wide64x16'] };

/** The default among `names` (the variants that fit): defaultVariant(), a fallback, or the first. */
export function preferredVariant(family, rows, names) {
  const order = [defaultVariant(family, rows), ...(DEFAULT_FALLBACKS[family] ?? [])];
  return order.find((name) => names.includes(name)) ?? names[0];
}

/**
 * A candidate whose fastest run is more than this times the fastest run of any candidate is
 * dropped after its first run: at L = 16384 the slowest candidates cost 2–3× the fastest, so
 * running each SELECTION_RUNS times would cost seconds.
 */
export const SELECTION_PRUNE_RATIO = 1.5;

/**
 * How far a candidate's output may be from its reference's on the same call before the selection
 * drops it on that device (kernel_selection.js): max |candidate − reference| over the call's
 * output (and weights) ≤ tolerance · max(1, max |reference|). The reference is the family's
 * default for the call (preferredVariant()), the variant that runs before measurement and that
 * CI runs everywhere. A variant declares its own in its catalogue entry above (`tolerance`: one
 * whose arithmetic is narrower than float32, e.g. float16); the float32 variants differ from the
 * reference only in the order of their sums (a few ulps times √K), far inside this, while a wrong
 * index or a missed tile is far outside.
 */
export const DEFAULT_TOLERANCE = 1e-4;

/** The variant names of each family ({ linear, attention, decode, q8linear, q8rows }: string[]). */
export const variantNames = () => ({
  linear: Object.keys(LINEAR_VARIANTS),
  attention: Object.keys(ATTENTION_VARIANTS),
  decode: Object.keys(DECODE_VARIANTS),
  q8linear: Object.keys(Q8_LINEAR_VARIANTS),
  q8rows: Object.keys(Q8_ROWS_VARIANTS),
});

/**
 * The device features any variant needs (its catalogue entry's `features`): device.js asks for
 * each where the adapter offers it, so that a new variant needs only its entry here.
 */
export const variantFeatures = () => [...new Set([LINEAR_VARIANTS, ATTENTION_VARIANTS, DECODE_VARIANTS, Q8_LINEAR_VARIANTS, Q8_ROWS_VARIANTS]
  .flatMap((catalogue) => Object.values(catalogue).flatMap((spec) => spec.features ?? [])))];

/**
 * Timed runs per candidate before a shape class's choice is made: the median of 3 shrugs off one
 * slow run (a first dispatch that warms caches, another module's work on the queue).
 */
export const SELECTION_RUNS = 3;
