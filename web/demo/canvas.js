// Canvas set-up shared by the heatmaps and the charts.

/** Sizes a canvas's backing store to its CSS size × devicePixelRatio; returns a 2-D context in
 *  CSS pixels. */
export function context(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const { width, height } = canvas.getBoundingClientRect();
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx, width, height };
}

/** Blanks a canvas (a panel whose run failed shows nothing stale). */
export function clearCanvas(canvas) {
  const { ctx, width, height } = context(canvas);
  ctx.clearRect(0, 0, width, height);
}
