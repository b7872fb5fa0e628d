// Every choice of WebGPU kernel in one place: which kernel family a call takes (flash or decode)
// and, as variants are added, which variant of each.

/**
 * On the GPU, query lengths up to this take the decode kernels (split-K over keys) instead of the
 * flash kernel: flash puts one query row on each of a workgroup's 64 invocations and walks the
 * keys serially, so at L <= 4 at least 60 of 64 invocations idle; the decode path spreads a row's
 * keys over S / 256 workgroups. Its cost is per row (each row re-reads K and V), so it stops at a
 * few rows.
 */
export const DECODE_MAX_L = 4;
