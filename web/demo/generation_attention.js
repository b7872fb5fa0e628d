// Where the model looked: one heatmap per layer and head (rows: generated characters, first at
// the top; columns: the KV cache's window, the character itself on the right), a colour legend,
// axes, and the link between a character and its row. Pointing at (or tapping) a generated
// character, or a heatmap row, marks that row in every heatmap and spells out the window it
// attended over, each character shaded by its weight in the chosen head (a click on a heatmap
// chooses the head).
import { $ } from './page.js';
import { heatmap, colorbar } from './heatmap.js';
import { heatScale } from './heat_scale.js';

/** Rows of [generated characters, window] per layer·head, each row right-aligned on its query. */
export class AttentionRows {
  constructor({ layers, numHeads, window }, maxRows) {
    this.window = window;
    this.numHeads = numHeads;
    this.rows = 0;
    this.maps = Array.from({ length: layers * numHeads }, () => new Float32Array(maxRows * window));
  }

  add({ layers }) {
    layers.forEach((heads, l) => heads.forEach((row, h) => {
      this.maps[l * this.numHeads + h].set(row, (this.rows + 1) * this.window - row.length);
    }));
    this.rows++;
  }

  /** A row the model did not report (its weights stayed on the GPU): left blank. */
  addBlank() {
    this.rows++;
  }

  /** The window weights of generated character `row` in map `map` (layer · numHeads + head). */
  row(map, row) {
    return this.maps[map].subarray(row * this.window, (row + 1) * this.window);
  }
}

let view = null;  // { rows, text (prompt + generated), promptLength, selected map, marked row }
// A row of 128 weights sums to 1 and most of it sits on the last few characters: on a log scale
// (heat_scale.js, decades chosen for the window's length) the rest of the window stays visible.
let scale = null;

const heatFigures = () => Array.from($('gen-heads').querySelectorAll('figure'));

/** One figure per layer and head (made once the model's sizes are known), the legend drawn. */
export function prepareHeatmaps({ layers, numHeads, window }) {
  const grid = $('gen-heads');
  if (grid.childElementCount !== layers * numHeads) {
    grid.replaceChildren();
    for (let l = 0; l < layers; l++) {
      for (let h = 0; h < numHeads; h++) {
        const figure = document.createElement('figure');
        figure.dataset.map = String(l * numHeads + h);
        const plot = document.createElement('div');
        plot.className = 'plot';
        const canvas = document.createElement('canvas');
        canvas.className = 'gen-heat';
        Object.assign(canvas.dataset, { layer: l, head: h });
        canvas.setAttribute('aria-label', `layer ${l} head ${h}: attention of each generated character over its window`);
        const marker = document.createElement('div');
        marker.className = 'row-marker';
        marker.hidden = true;
        plot.append(canvas, marker);
        const axis = document.createElement('div');
        axis.className = 'axis-x';
        axis.append(...[`${window - 1} back`, 'itself'].map((text) => Object.assign(document.createElement('span'), { textContent: text })));
        const caption = document.createElement('figcaption');
        caption.append(`layer ${l} · head ${h} · `, Object.assign(document.createElement('span'), { className: 'axis-y' }));
        figure.append(plot, axis, caption);
        grid.append(figure);
      }
    }
  }
  scale = heatScale('log', window);
  colorbar($('gen-colorbar'), scale.colorAt);
  $('gen-scale-lo').textContent = scale.lo;
  $('gen-scale-hi').textContent = scale.hi;
  $('gen-window-size').textContent = String(window);
  return heatFigures().map((f) => f.querySelector('canvas'));
}

/** Starts a new run's view: nothing marked, the window view empty. */
export function startView(rows, prompt) {
  view = { rows, text: prompt, promptLength: prompt.length, selected: view?.selected ?? 0, marked: null };
  $('gen-rows').textContent = '0';
  showWindow(null);
}

/** Adds a generated character (its span goes into #gen-out; its row is in view.rows). */
export function addCharacter(char) {
  const i = view.text.length - view.promptLength;
  view.text += char;
  const span = document.createElement('span');
  span.textContent = char;
  span.dataset.i = String(i);
  $('gen-out').append(span);
}

/** Redraws the heatmaps from view.rows (many rows: each pixel row shows its block's maxima). */
export function drawHeatmaps(canvases) {
  const { rows } = view;
  if (rows.rows === 0) return;
  canvases.forEach((canvas, i) => heatmap(canvas, rows.maps[i], rows.rows, rows.window, { maxPool: true, colorOf: scale.colorOf }));
  $('gen-rows').textContent = String(rows.rows);
  // The y axis: which characters the rows are (the maps are too small for tick labels).
  for (const axis of $('gen-heads').querySelectorAll('.axis-y')) axis.textContent = `rows: characters 1–${rows.rows} ↓`;
  if (view.marked !== null) markRow(view.marked);
}

/** Empties the text, the heatmaps and the window view (a failed run shows nothing stale). */
export function clearView() {
  view = null;
  $('gen-prompt').textContent = '';
  $('gen-out').replaceChildren();
  $('gen-heads').replaceChildren();
  $('gen-rows').textContent = '–';
  showWindow(null);
}

/** Marks generated character `i`: its span, its row in every heatmap, its window below. */
function markRow(i) {
  if (!view || i < 0 || i >= view.rows.rows) return;
  view.marked = i;
  for (const el of $('gen-out').querySelectorAll('.marked')) el.classList.remove('marked');
  $('gen-out').children[i]?.classList.add('marked');
  for (const figure of heatFigures()) {
    const marker = figure.querySelector('.row-marker');
    marker.hidden = false;
    marker.style.top = `${(100 * (i + 0.5)) / view.rows.rows}%`;
  }
  showWindow(i);
}

/** The window character `i` attended over, in the selected head, each key shaded by its weight. */
function showWindow(i) {
  const box = $('gen-window');
  if (i === null) {
    box.replaceChildren();
    $('gen-window-label').textContent = 'Point at (or tap) a generated character to see where each head looked when it was chosen.';
    return;
  }
  const { rows, text, promptLength, selected } = view;
  const weights = rows.row(selected, i);
  const query = promptLength + i - 1;  // the character before it: the query that chose it
  const layer = Math.floor(selected / rows.numHeads);
  const head = selected % rows.numHeads;
  const shown = JSON.stringify(text[promptLength + i]);
  $('gen-window-label').textContent = `Character ${i + 1}, ${shown}, was chosen by the query at the character before it; `
    + `layer ${layer} · head ${head} weighted its window like this (brighter: more weight; click a heatmap for another head):`;
  const cells = [];
  for (let j = 0; j < rows.window; j++) {
    const position = query - (rows.window - 1 - j);
    if (position < 0) continue;
    const span = document.createElement('span');
    const w = weights[j];
    const [r, g, b] = scale.colorOf(w);
    span.textContent = text[position] === '\n' ? '↵' : text[position];
    span.style.background = `rgb(${r},${g},${b})`;
    span.style.color = (r * 0.3 + g * 0.6 + b * 0.1) > 140 ? '#000' : '#fff';
    span.title = `${position < promptLength ? 'prompt' : 'generated'} position ${position}: weight ${w.toFixed(3)}`;
    cells.push(span);
  }
  box.replaceChildren(...cells);
  Object.assign(document.body.dataset, { genMarked: String(i), genWindowKeys: String(cells.length) });
  for (const figure of heatFigures()) figure.classList.toggle('selected', Number(figure.dataset.map) === selected);
}

/** Pointer and tap handlers: characters → rows, heatmap rows → characters, heatmap → head. */
export function initAttentionView() {
  const fromCharacter = (event) => {
    const i = event.target.closest?.('#gen-out span')?.dataset.i;
    if (i !== undefined) markRow(Number(i));
  };
  $('gen-out').addEventListener('pointerover', fromCharacter);
  $('gen-out').addEventListener('click', fromCharacter);
  const fromHeatmap = (event, select) => {
    const figure = event.target.closest('#gen-heads figure');
    const canvas = figure?.querySelector('canvas');
    if (!view || !canvas || view.rows.rows === 0 || event.target !== canvas) return;
    if (select) view.selected = Number(figure.dataset.map);
    const { top, height } = canvas.getBoundingClientRect();
    markRow(Math.min(view.rows.rows - 1, Math.max(0, Math.floor(((event.clientY - top) / height) * view.rows.rows))));
  };
  $('gen-heads').addEventListener('pointermove', (e) => fromHeatmap(e, false));
  $('gen-heads').addEventListener('click', (e) => fromHeatmap(e, true));
}
