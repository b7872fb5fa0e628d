// The linear algebra the low-rank panel checks the module with, in double precision: singular values
// (for the rank of W_i) and softmax through a bilinear form.

/** Singular values of the row-major m×n matrix a (one-sided Jacobi in double), largest first. */
export function singularValues(a, m, n) {
  // Columns of a (or of aᵀ when n > m, so that there are min(m, n) of them).
  const [rows, cols, at] = n <= m ? [m, n, (r, c) => a[r * n + c]] : [n, m, (r, c) => a[c * n + r]];
  const col = Array.from({ length: cols }, (_, c) => Float64Array.from({ length: rows }, (_, r) => at(r, c)));
  for (let sweep = 0; sweep < 60; sweep++) {
    let rotated = false;
    for (let p = 0; p < cols - 1; p++) {
      for (let q = p + 1; q < cols; q++) {
        const cp = col[p];
        const cq = col[q];
        let alpha = 0;
        let beta = 0;
        let gamma = 0;
        for (let r = 0; r < rows; r++) {
          alpha += cp[r] * cp[r];
          beta += cq[r] * cq[r];
          gamma += cp[r] * cq[r];
        }
        if (Math.abs(gamma) <= 1e-15 * Math.sqrt(alpha * beta)) continue;
        rotated = true;
        const zeta = (beta - alpha) / (2 * gamma);
        const t = (zeta >= 0 ? 1 : -1) / (Math.abs(zeta) + Math.sqrt(1 + zeta * zeta));
        const c = 1 / Math.sqrt(1 + t * t);
        const s = c * t;
        for (let r = 0; r < rows; r++) {
          const u = cp[r];
          cp[r] = c * u - s * cq[r];
          cq[r] = s * u + c * cq[r];
        }
      }
    }
    if (!rotated) break;
  }
  return col.map((v) => Math.hypot(...v)).sort((x, y) => y - x);
}

/** softmax(x W yᵀ · scale) over the S keys, for each of the L query rows: [L, S] in double. */
export function bilinearWeights(x, W, y, L, S, E, kdim, scale) {
  const out = new Float64Array(L * S);
  const u = new Float64Array(kdim);
  for (let i = 0; i < L; i++) {
    u.fill(0);  // u = x_i W
    for (let r = 0; r < E; r++) {
      const xr = x[i * E + r];
      for (let c = 0; c < kdim; c++) u[c] += xr * W[r * kdim + c];
    }
    let max = -Infinity;
    for (let j = 0; j < S; j++) {
      let dot = 0;
      for (let c = 0; c < kdim; c++) dot += u[c] * y[j * kdim + c];
      out[i * S + j] = dot * scale;
      max = Math.max(max, out[i * S + j]);
    }
    let sum = 0;
    for (let j = 0; j < S; j++) sum += (out[i * S + j] = Math.exp(out[i * S + j] - max));
    for (let j = 0; j < S; j++) out[i * S + j] /= sum;
  }
  return out;
}

