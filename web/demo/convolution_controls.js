// The convolution panel's controls: kernel, mask mode, sharpness, clicks on the input (toggle a
// pixel) and on the probe image (move the probe). Each change queues a run.
import { MultiHeadAttention } from './loaded_package.js';
import { $, setStatus, errorText } from './page.js';
import { N, KERNELS } from './convolution_math.js';
import { conv, sharpness, fmtS, runConvolution } from './convolution_panel.js';
import { signedColorbar } from './heatmap.js';

// Coalesces the §6 controls' events: one run at a time, the latest settings win.
let convChain = Promise.resolve();
let convPending = null;
export function queueConvolution(sweep) {
  if (convPending) {
    convPending.sweep ||= sweep;
    return convPending.promise;
  }
  const job = { sweep };
  job.promise = convChain.then(() => {
    convPending = null;
    return runConvolution({ sweep: job.sweep });
  });
  convPending = job;
  convChain = job.promise.catch(() => {});
  return job.promise;
}

function onConvolutionControl(sweep) {
  if (!MultiHeadAttention) return;
  queueConvolution(sweep).catch((e) => {
    console.error(e);
    setStatus('error', errorText(e));
    document.body.dataset.status = 'error';
  });
}

/** Cell (row, col) of an N×N canvas under a click. */
function cellAt(canvas, event) {
  const { left, top, width, height } = canvas.getBoundingClientRect();
  const col = Math.floor(((event.clientX - left) / width) * N);
  const row = Math.floor(((event.clientY - top) / height) * N);
  return row >= 0 && row < N && col >= 0 && col < N ? [row, col] : null;
}

export function initConvolutionControls() {
  $('conv-kernel').replaceChildren(...Object.entries(KERNELS).map(([key, [label]]) => new Option(label, key)));
  $('conv-kernel').addEventListener('change', () => onConvolutionControl(true));
  $('conv-mode').addEventListener('change', () => {
    $('conv-sharpness').disabled = $('conv-mode').value === 'bool';
    onConvolutionControl(false);
  });
  $('conv-sharpness').addEventListener('input', () => {
    $('conv-s').textContent = fmtS(sharpness());
    onConvolutionControl(false);
  });
  $('conv-controls').addEventListener('submit', (e) => e.preventDefault());
  $('conv-input').addEventListener('click', (e) => {
    const cell = cellAt($('conv-input'), e);
    if (!cell || !conv.image) return;
    const i = cell[0] * N + cell[1];
    conv.image[i] = conv.image[i] > 0 ? 0 : 1;
    onConvolutionControl(true);
  });
  $('conv-probe').addEventListener('click', (e) => {
    const cell = cellAt($('conv-probe'), e);
    if (!cell) return;
    conv.probe = cell;
    onConvolutionControl(false);
  });
  signedColorbar($('conv-colorbar'));
}
