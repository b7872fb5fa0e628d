// Line and bar charts with a log10 y axis (the singular values of W_i, the convolution sharpness sweep).
import { context } from './canvas.js';

const CHART_FONT = '11px system-ui, "DejaVu Sans", sans-serif';
export const MUTED = '#5b6475';
const GRID = '#e6e9ef';

/** Axes for a chart with a log10 y range [y0, y1]; returns the plot box and coordinate maps. */
export function chartAxes(canvas, { x0, x1, y0, y1, yTicks, xTicks, xLabel }) {
  const { ctx, width, height } = context(canvas);
  ctx.clearRect(0, 0, width, height);
  const box = { left: 40, right: width - 10, top: 10, bottom: height - (xLabel ? 32 : 20) };
  const X = (x) => box.left + ((x - x0) / (x1 - x0)) * (box.right - box.left);
  const Y = (y) => box.bottom - ((Math.min(y1, Math.max(y0, y)) - y0) / (y1 - y0)) * (box.bottom - box.top);
  ctx.font = CHART_FONT;
  ctx.fillStyle = MUTED;
  ctx.strokeStyle = GRID;
  ctx.lineWidth = 1;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (const y of yTicks) {
    ctx.beginPath();
    ctx.moveTo(box.left, Math.round(Y(y)) + 0.5);
    ctx.lineTo(box.right, Math.round(Y(y)) + 0.5);
    ctx.stroke();
    ctx.fillText(y === 0 ? '1' : `1e${y}`, box.left - 4, Y(y));
  }
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const [x, label] of xTicks) ctx.fillText(label, X(x), box.bottom + 4);
  if (xLabel) ctx.fillText(xLabel, (box.left + box.right) / 2, box.bottom + 18);
  ctx.strokeStyle = '#c3c9d4';
  ctx.strokeRect(box.left + 0.5, box.top + 0.5, box.right - box.left, box.bottom - box.top);
  return { ctx, box, X, Y };
}

/** log10 that puts 0 (an exact result) at `floor`, which the axes clamp to their bottom, instead of −∞. */
export const log10 = (v, floor = -12) => (v > 0 ? Math.log10(v) : floor);
