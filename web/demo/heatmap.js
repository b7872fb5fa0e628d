// Matrices as heatmaps, their colour legends and cell outlines.
import { context } from './canvas.js';
import { color, diverging } from './colors.js';

/** Heatmap of the [rows, cols] matrix at `offset` (√ colour scale over [0, 1], or `colorOf`);
 *  optional per-row argmax outlines. */
export function heatmap(canvas, w, rows, cols, { offset = 0, argmax = null, colorOf = color } = {}) {
  const img = new ImageData(cols, rows);
  for (let i = 0; i < rows * cols; i++) {
    const [r, g, b] = colorOf(w[offset + i]);
    img.data.set([r, g, b, 255], i * 4);
  }
  const cells = new OffscreenCanvas(cols, rows);
  cells.getContext('2d').putImageData(img, 0, 0);
  const { ctx, width, height } = context(canvas);
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
