// Matrices as heatmaps, their colour legends and cell outlines.
import { context } from './canvas.js';
import { color, diverging } from './colors.js';

/** Heatmap of the [rows, cols] matrix at `offset` (√ colour scale over [0, 1], or `colorOf`);
 *  optional per-row argmax outlines. `maxPool`: where the matrix has more cells than the canvas
 *  has device pixels (L = 1024 on 288 px), each pixel shows the largest value of its block, so a
 *  one-key peak stays visible instead of being skipped by nearest-neighbour sampling. */
export function heatmap(canvas, w, rows, cols, { offset = 0, argmax = null, colorOf = color, maxPool = false } = {}) {
  const { ctx, width, height } = context(canvas);
  const dpr = window.devicePixelRatio || 1;
  const m = maxPool ? pooled(w, offset, rows, cols, Math.round(height * dpr), Math.round(width * dpr))
    : { data: w, offset, rows, cols };
  const img = new ImageData(m.cols, m.rows);
  for (let i = 0; i < m.rows * m.cols; i++) {
    const [r, g, b] = colorOf(m.data[m.offset + i]);
    img.data.set([r, g, b, 255], i * 4);
  }
  const cells = new OffscreenCanvas(m.cols, m.rows);
  cells.getContext('2d').putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.clearRect(0, 0, width, height);
  ctx.drawImage(cells, 0, 0, width, height);
  const cw = width / cols;
  const ch = height / rows;
  if (argmax && cw >= 3 && ch >= 3) {
    ctx.strokeStyle = '#ff3b6b';
    ctx.lineWidth = Math.min(2, cw / 4);
    for (let i = 0; i < rows; i++) {
      const lw = ctx.lineWidth;
      ctx.strokeRect(argmax[i] * cw + lw / 2, i * ch + lw / 2, cw - lw, ch - lw);
    }
  }
}

/** The matrix shrunk by block maxima to at most maxRows × maxCols cells (itself if it fits). */
function pooled(w, offset, rows, cols, maxRows, maxCols) {
  const fy = Math.ceil(rows / Math.max(1, maxRows));
  const fx = Math.ceil(cols / Math.max(1, maxCols));
  if (fy <= 1 && fx <= 1) return { data: w, offset, rows, cols };
  const pr = Math.ceil(rows / fy);
  const pc = Math.ceil(cols / fx);
  const data = new Float32Array(pr * pc).fill(-Infinity);
  for (let i = 0; i < rows; i++) {
    const base = offset + i * cols;
    const out = Math.floor(i / fy) * pc;
    for (let j = 0; j < cols; j++) {
      const k = out + Math.floor(j / fx);
      if (w[base + j] > data[k]) data[k] = w[base + j];
    }
  }
  return { data, offset: 0, rows: pr, cols: pc };
}

/** Outlines cell (row, col) of a rows×cols heatmap. */
export function outlineCell(canvas, rows, cols, row, col, style = '#ff3b6b') {
  const ctx = canvas.getContext('2d');
  const { width, height } = canvas.getBoundingClientRect();
  const cw = width / cols;
  const ch = height / rows;
  ctx.strokeStyle = style;
  ctx.lineWidth = 2;
  ctx.strokeRect(col * cw + 1, row * ch + 1, cw - 2, ch - 2);
}

/** A horizontal colour legend: colorAt(t) from t = 0 (left) to 1 (right). */
export function colorbar(canvas, colorAt = (t) => color(t ** 2) /* linear in the √ scale */) {
  const { ctx, width, height } = context(canvas);
  for (let x = 0; x < width; x++) {
    const [r, g, b] = colorAt(x / (width - 1));
    ctx.fillStyle = `rgb(${r},${g},${b})`;
    ctx.fillRect(x, 0, 1, height);
  }
}

/** The legend of signedColor(): −scale on the left, +scale on the right. */
export const signedColorbar = (canvas) => colorbar(canvas, (t) => diverging(2 * t - 1));
