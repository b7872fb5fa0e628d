// What bench/prefill/char_dtypes.mjs measures, in Node or in the page (bench/browser/suite.html?suite=char_dtypes, runCharDtypesPage()):
// the char-level GPT (web/model/) with its attention weights and caches in each storage dtype
// against float32. load(options) makes a CharGpt with CharGpt.load's options; golden is
// web/model/golden.json (its prompt and, for the header, its greedy text and margin).
import { generate } from '../../web/model/generate.js';
import { markdownTable, plainTable } from '../lib/table.mjs';

// [weightsDtype, cache dtype, activations (create()'s; float32 where not given)]; float32 first:
// the others are compared with it.
export const COMBOS = [
  ['float32', 'float32'], ['float16', 'float32'], ['float16', 'float16'], ['bfloat16', 'float32'],
  ['bfloat16', 'float16'], ['int8', 'float32'], ['int8', 'int8'], ['int8', 'float32', 'int8'],
  ['int4', 'float32'], ['int4', 'float32', 'int8'],
];

/** The greedy text and its tokens/s (the prompt's forward counted, as generate.mjs reports it). */
async function greedy(model, prompt, tokens) {
  let text = '', ms = 0, count = 0;
  for await (const step of generate(model, prompt, { maxTokens: tokens })) {
    text += step.char;
    ms += step.ms;
    count++;
  }
  return { text, tokensPerS: (count * 1000) / ms };
}

/** Logits of the prompt (one forward) and of each of `ids` but the last fed one at a time. */
async function forcedLogits(model, promptIds, ids) {
  model.reset();
  const parts = [(await model.forward(promptIds)).logits];
  for (const id of ids.slice(0, -1)) parts.push((await model.forward([id])).logits);
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

const maxAbsDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
const firstDifference = (a, b) => [...a].findIndex((c, i) => c !== b[i]);

/**
 * Every pair of COMBOS loaded first; one untimed generate() each (the JS of the MLP and head and
 * the WASM reach their optimised tiers), then `runs` rounds timing each once in turn (a slow
 * spell of the machine hits all alike; best kept). Logits are compared along float32's greedy
 * tokens (teacher forcing: the same positions for every dtype). Resolves to rows { weightsDtype,
 * cacheDtype, text, activations, tokensPerS, maxDiff, firstDifference (-1: same text) }.
 */
export async function measureDtypes(load, golden, { tokens, runs }) {
  const models = [];
  try {
    for (const [weightsDtype, cacheDtype, activations = 'float32'] of COMBOS) {
      models.push({ weightsDtype, cacheDtype, activations, model: await load({ threads: 1, weightsDtype, cacheDtype, activations }) });
    }
    for (const m of models) m.text = (await greedy(m.model, golden.prompt, tokens)).text;
    for (const m of models) m.tokensPerS = 0;
    for (let r = 0; r < runs; r++) {
      for (const m of models) m.tokensPerS = Math.max(m.tokensPerS, (await greedy(m.model, golden.prompt, tokens)).tokensPerS);
    }
    const ids = models[0].model.tokenizer.encode(models[0].text);
    for (const m of models) m.logits = await forcedLogits(m.model, golden.promptIds, ids);
  } finally {
    for (const { model } of models) model.dispose();
  }
  const [reference] = models;
  return models.map(({ weightsDtype, cacheDtype, activations, text, tokensPerS, logits }) => ({
    weightsDtype, cacheDtype, activations, text, tokensPerS, maxDiff: maxAbsDiff(logits, reference.logits), firstDifference: firstDifference(text, reference.text),
  }));
}

/** The table (and the differing texts) of measureDtypes' rows. */
export function formatDtypes(rows, golden, tokens, { markdown = false } = {}) {
  const columns = [
    ['weights', (r) => r.weightsDtype, 'l'],
    ['cache', (r) => r.cacheDtype, 'l'],
    ['activations', (r) => r.activations ?? 'float32', 'l'],
    ['tokens/s', (r) => r.tokensPerS.toFixed(1), 'r'],
    ['/ float32', (r) => (r.tokensPerS / rows[0].tokensPerS).toFixed(2), 'r'],
    ['max |Δ logit| vs float32', (r) => r.maxDiff.toExponential(2), 'r'],
    ['greedy text = float32', (r) => (r.firstDifference < 0 ? 'yes' : `no: from character ${r.firstDifference}`), 'l'],
  ];
  return [
    `float32 greedy text ${rows[0].text === golden.greedyContinuation.slice(0, tokens) ? 'equals' : 'DIFFERS from'} golden.json's (PyTorch); `
      + `its smallest top-1/top-2 logit margin: ${golden.minGreedyMargin.toFixed(3)} (step ${golden.minGreedyMarginStep})`,
    '',
    (markdown ? markdownTable : plainTable)(columns, rows),
    ...rows.filter((r) => r.firstDifference >= 0).map((r) => `\n${r.weightsDtype}/${r.cacheDtype}/${r.activations ?? 'float32'}: ${JSON.stringify(golden.prompt + r.text)}`),
    '',
    `prompt ${JSON.stringify(golden.prompt)}, ${tokens} greedy characters, logits over ${golden.promptIds.length} + ${tokens - 1} positions`,
  ].join('\n');
}

/** The page's run (?tokens=&runs=): the committed model and golden data fetched from web/model/. */
export async function runCharDtypesPage(api, q) {
  const { CharGpt } = await import('/web/model/char_gpt.js');
  const bytes = new Uint8Array(await (await fetch('/web/model/model.safetensors')).arrayBuffer());
  const golden = await (await fetch('/web/model/golden.json')).json();
  const rows = await measureDtypes((options) => CharGpt.load(api, bytes, options), golden,
    { tokens: Number(q.get('tokens') ?? golden.continuationLength), runs: Number(q.get('runs') ?? 5) });
  return { rows };
}
