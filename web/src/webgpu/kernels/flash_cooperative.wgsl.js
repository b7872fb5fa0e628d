// WGSL shared by the cooperative flash kernels (flash_tiled, flash_quad): 256 invocations (16×16)
// share 64 query rows of one (batch, head), invocation (tr, tc) owning rows 4·tr … 4·tr + 3. The
// pieces here are what the two do alike: the ids, Q staged once in workgroup memory as vec4s
// over rows (qs[d·16 + row/4][row % 4]), the running max and sum per owned row (vec4s m and l),
// the causal end and the window's start of the key loop (uniform per workgroup, as the barriers need), the staging of a
// tile's K or V rows, and the end: each owned row's output scaled by 1/l and its stats.

/**
 * The start of main(): ids, Q staged in workgroup memory (unless stageQ is false: `qStore` writes
 * value x of row r, feature d < `qWidth`; zeros past DK), m and l, keyBegin and keyEnd. Needs BR and DK.
 */
export const cooperativeStart = ({ stageQ = true, qWidth = 'DK', qStore = 'qs[d * 16u + r / 4u][r % 4u] = x;' } = {}) => /* wgsl */ `
  let b = wg.y / p.H;
  let h = wg.y % p.H;
  let g = kvHead(h);
  let tr = t / 16u;
  let tc = t % 16u;
  let row0 = wg.x * BR;
${stageQ ? `
  for (var e = t; e < BR * ${qWidth}; e += 256u) {
    let r = e / ${qWidth};
    let d = e % ${qWidth};
    var x = 0.0;
    if (row0 + r < p.L && d < DK) { x = q[p.qOff + (b * p.L + row0 + r) * p.qStride + h * DK + d]; }
    ${qStore}
  }` : ''}

  var m = vec4f(NEG);   // running max of row 4·tr + i in m[i]
  var l = vec4f(0.0);   // running sum
  var keyEnd = p.S;
  if (p.causal != 0u) { keyEnd = min(p.S, row0 + BR + shiftOf(b)); }
  let keyBegin = firstKey(b, row0);  // a window's first key: the loop visits O(W) keys
`;

/**
 * A loop staging `width` values of each of the tile's BC key rows from `src` (k or v, read by
 * kAt / vAt, head width `dim`; zeros past the n keys of the tile and past `dim`): `store` writes
 * value x of key c, element d.
 */
export const stageKeyRows = ({ src, width, dim, store }) => /* wgsl */ `
    for (var e = t; e < BC * ${width}; e += 256u) {
      let c = e / ${width};
      let d = e % ${width};
      var x = 0.0;
      if (c < n && d < ${dim}) { x = ${src}At(keyRow(b, j0 + c), g, d); }
      ${store}
    }`;

/** The end of main(): `writeRow` writes row `row`'s outputs (scaled by `inv`) at `at`; then its stats. */
export const cooperativeEnd = (writeRow) => /* wgsl */ `
  for (var i = 0u; i < 4u; i++) {
    let row = row0 + 4u * tr + i;
    if (row >= p.L) { continue; }
    var inv = 0.0;
    if (l[i] > 0.0) { inv = 1.0 / l[i]; }
    let at = (b * p.L + row) * p.oStride + h * DV;
${writeRow}
    if (tc == 0u) {
      let st = ((b * p.H + h) * p.L + row) * 2u;
      stats[st] = m[i];
      stats[st + 1u] = l[i];
    }
  }`;
