#!/usr/bin/env node
// The committed char-level GPT (web/model/) with its attention modules' weights and caches in
// each storage dtype, against the same model in float32, in Node:
//   node bench/char_dtypes.mjs [--tokens N] [--runs R] [--markdown]
// Per (weightsDtype, cache dtype): the greedy continuation of web/model/golden.json's prompt
// (whether it equals float32's, else the first character where it differs), the max |logit
// difference| from float32 over the prompt's positions and N steps fed float32's greedy tokens
// (teacher forcing: every dtype is compared at the same positions, even after its own text
// would have gone another way), and tokens/s of generate() (the prompt's forward counted, as
// web/model/generate.mjs reports it; best of R runs, after one untimed run). Only the attention modules change dtype:
// the embedding, LayerNorms, MLP and head stay float64 in JS (web/model/char_gpt.js).
//
//   --tokens N    greedy characters (default 200: golden.json's continuation)
//   --runs R      timed generate() runs per dtype, best reported (default 5)
//   --markdown    also print the table as Markdown
import { readFileSync } from 'node:fs';
import { generate } from '../web/model/generate.js';
import { loadNodeModel } from '../web/model/load_node.js';
import { commonHeader, exitWithUsage, parseFlags } from './run_env.mjs';
import { markdownTable, plainTable } from './table.mjs';

// float32 first: the others are compared with it.
const COMBOS = [
  ['float32', 'float32'], ['float16', 'float32'], ['float16', 'float16'], ['bfloat16', 'float32'],
  ['bfloat16', 'float16'], ['int8', 'float32'], ['int8', 'int8'],
];

const golden = JSON.parse(readFileSync(new URL('../web/model/golden.json', import.meta.url), 'utf8'));

const { values } = parseFlags(import.meta.url, process.argv.slice(2), {
  tokens: { type: 'string', default: String(golden.continuationLength) },
  runs: { type: 'string', default: '5' },
  markdown: { type: 'boolean', default: false },
});
const tokens = Number(values.tokens), runs = Number(values.runs);
if (!Number.isInteger(tokens) || tokens < 1) exitWithUsage(import.meta.url, `--tokens: expected an integer >= 1, got '${values.tokens}'`);
if (!Number.isInteger(runs) || runs < 1) exitWithUsage(import.meta.url, `--runs: expected an integer >= 1, got '${values.runs}'`);

/** The greedy text and its tokens/s. */
async function greedy(model) {
  let text = '', ms = 0, count = 0;
  for await (const step of generate(model, golden.prompt, { maxTokens: tokens })) {
    text += step.char;
    ms += step.ms;
    count++;
  }
  return { text, tokensPerS: (count * 1000) / ms };
}

/** Logits of the prompt (one forward) and of each of `ids` fed one at a time, concatenated. */
async function forcedLogits(model, ids) {
  model.reset();
  const parts = [(await model.forward(golden.promptIds)).logits];
  for (const id of ids.slice(0, -1)) parts.push((await model.forward([id])).logits);
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

const maxAbsDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
const firstDifference = (a, b) => [...a].findIndex((c, i) => c !== b[i]);

const header = commonHeader('char_dtypes.mjs', process.argv.slice(2));
console.log(Object.entries(header).map(([k, v]) => `${k}: ${v}`).join('\n'));
// Every model loaded first; one untimed generate() each (the JS of the MLP and head, and the
// WASM, reach their optimised tiers), then `runs` rounds that time each once, in turn (a slow
// spell of the machine hits all alike).
const models = [];
try {
  for (const [weightsDtype, cacheDtype] of COMBOS) models.push({ weightsDtype, cacheDtype, model: await loadNodeModel({ threads: 1, weightsDtype, cacheDtype }) });
  for (const m of models) m.text = (await greedy(m.model)).text;
  for (const m of models) m.tokensPerS = 0;
  for (let r = 0; r < runs; r++) {
    for (const m of models) m.tokensPerS = Math.max(m.tokensPerS, (await greedy(m.model)).tokensPerS);
  }
  const ids = models[0].model.tokenizer.encode(models[0].text);
  for (const m of models) m.logits = await forcedLogits(m.model, ids);
} finally {
  for (const { model } of models) model.dispose();
}
const [reference] = models;
const rows = models.map(({ weightsDtype, cacheDtype, text, tokensPerS, logits }) => {
  const at = firstDifference(text, reference.text);
  return { weightsDtype, cacheDtype, text, tokensPerS, maxDiff: maxAbsDiff(logits, reference.logits), same: at < 0 ? 'yes' : `no: from character ${at}` };
});

const COLUMNS = [
  ['weights', (r) => r.weightsDtype, 'l'],
  ['cache', (r) => r.cacheDtype, 'l'],
  ['tokens/s', (r) => r.tokensPerS.toFixed(1), 'r'],
  ['/ float32', (r) => (r.tokensPerS / rows[0].tokensPerS).toFixed(2), 'r'],
  ['max |Δ logit| vs float32', (r) => r.maxDiff.toExponential(2), 'r'],
  ['greedy text = float32', (r) => r.same, 'l'],
];
console.log(`\nfloat32 greedy text ${reference.text === golden.greedyContinuation ? 'equals' : 'DIFFERS from'} golden.json's (PyTorch); `
  + `its smallest top-1/top-2 logit margin: ${golden.minGreedyMargin.toFixed(3)} (step ${golden.minGreedyMarginStep})\n`);
console.log(plainTable(COLUMNS, rows));
if (values.markdown) console.log(`\n${markdownTable(COLUMNS, rows)}`);
for (const r of rows.filter((row) => row.same !== 'yes')) console.log(`\n${r.weightsDtype}/${r.cacheDtype}: ${JSON.stringify(golden.prompt + r.text)}`);
console.log(`\nprompt ${JSON.stringify(golden.prompt)}, ${tokens} greedy characters, logits over ${golden.promptIds.length} + ${tokens - 1} positions`);
process.exit(0);
