// What the panels share: element look-up, the status line, time formatting, head <select>s and
// resetting a panel whose run failed.
import { clearCanvas } from './canvas.js';

export const $ = (id) => document.getElementById(id);

/** The status line under the form: kind is its CSS class (running | ok | error). */
export function setStatus(kind, text) {
  const el = $('status');
  el.textContent = text;
  el.className = `status ${kind}`;
}

/** How an error reads on the status line (anything may be thrown, not only an Error). */
export const errorText = (e) => `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`;

export const fmtMs = (ms) => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : ms < 10 ? `${ms.toFixed(2)} ms` : `${ms.toFixed(1)} ms`);

/** Blanks a panel: clears its canvases, shows '–' in its fields, removes its data-* results. */
export function clearPanel(canvases, ids, dataKeys) {
  for (const id of canvases) clearCanvas($(id));
  for (const id of ids) $(id).textContent = '–';
  for (const key of dataKeys) delete document.body.dataset[key];
}

/** Offers heads 0..h−1 in a panel's head <select>, keeping the chosen one where it still exists. */
export function refillHeadSelect(select, h) {
  const keep = Math.min(Number(select.value) || 0, h - 1);
  select.replaceChildren(...Array.from({ length: h }, (_, i) => new Option(String(i), String(i))));
  select.value = String(keep);
}

/** Calls draw() when the <select> `id` changes; it redraws from stored results, so a failure is
 *  reported on the status line without a new run. */
export function redrawOnChange(id, draw) {
  $(id).addEventListener('change', () => {
    try {
      draw();
    } catch (e) {
      setStatus('error', `${e.name}: ${e.message}`);
    }
  });
}
