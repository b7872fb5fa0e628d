// The committed char-level GPT (web/model/) generating on each path, in one run:
//   VK_ICD_FILENAMES=<a GPU's Vulkan ICD .json> node bench/gpu/gpu_char_gpt.mjs [--tokens N] [--runs R]
//   VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/gpu/gpu_char_gpt.mjs --tokens 20 --runs 1
// Rows: CharGpt with its attention on WASM (one thread) and on WebGPU (a forward() per layer,
// the rest float64 JS), and CharGptGpu (char_gpt_gpu.js: everything on the GPU, a GpuStep a
// token). Per row, of a greedy generate() of golden.json's prompt (the run of R, after one
// untimed, with the fastest median token): the prompt's step in ms (one forward on CharGpt, a
// GpuBatch of its rows on CharGptGpu), a generated token's ms (median) and tokens/s from it, whether
// every run's text is golden's greedy continuation, and the max |logit − golden| over the prompt.
import { readFile } from 'node:fs/promises';
import { benchAdapter } from './gpu_adapter.mjs';
import * as api from '../../web/src/node.js';
import { CharGpt } from '../../web/model/char_gpt.js';
import { CharGptGpu } from '../../web/model/char_gpt_gpu.js';
import { generate } from '../../web/model/generate.js';
import { MODEL_FILE } from '../../web/model/load_node.js';
import { maxAbsDiff } from '../lib/suite.mjs';

const golden = JSON.parse(await readFile(new URL('../../web/model/golden.json', import.meta.url), 'utf8'));
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const tokens = option('--tokens', golden.continuationLength);
const runs = option('--runs', 3);
if (!(Number.isInteger(tokens) && tokens >= 1 && tokens <= golden.continuationLength && Number.isInteger(runs) && runs >= 1)) {
  console.error(`usage: node bench/gpu/gpu_char_gpt.mjs [--tokens 1..${golden.continuationLength}] [--runs R >= 1]`);
  process.exit(2);
}

const { gpu, info } = await benchAdapter();
const bytes = await readFile(MODEL_FILE);
const PATHS = [
  ['attention on WASM (1 thread)', () => CharGpt.load(api, bytes, { threads: 1, backend: 'wasm' })],
  ['attention on WebGPU, a forward() a layer', () => CharGpt.load(api, bytes, { backend: 'webgpu', gpu })],
  ['whole model on WebGPU, a GpuStep a token', () => CharGptGpu.load(api, bytes, { gpu })],
];

// Resolves to { text, promptMs (the first step: the prompt's forward and one sampling), stepMs
// (the median of the steps after it: a token's forward and sampling) } of a greedy generate().
async function greedy(model) {
  let text = '';
  const ms = [];
  for await (const step of generate(model, golden.prompt, { maxTokens: tokens })) {
    text += step.char;
    ms.push(step.ms);
  }
  const steps = ms.slice(1).sort((a, b) => a - b);
  return { text, promptMs: ms[0], stepMs: steps.length ? steps[steps.length >> 1] : NaN };
}

// The max |logit − golden| over the prompt's positions.
async function promptDiff(model) {
  model.reset();
  const { logits } = await model.forward(golden.promptIds);
  return maxAbsDiff(golden.promptLogits.flat(), logits);
}

console.log(`adapter: ${JSON.stringify({ vendor: info.vendor, architecture: info.architecture, description: info.description })}`);
console.log(`char-gpt (2 layers, d 128, window 128): greedy ${tokens} characters after a ${golden.promptIds.length}-character prompt, best of ${runs}\n`);
console.log(`${'path'.padEnd(42)}  ${'prompt ms'.padStart(9)}  ${'ms/token'.padStart(8)}  ${'tokens/s'.padStart(8)}  golden text  max |logit − golden|`);
for (const [name, load] of PATHS) {
  const model = await load();
  try {
    await greedy(model);
    const timed = [];
    for (let r = 0; r < runs; r++) timed.push(await greedy(model));
    const best = timed.reduce((a, b) => (b.stepMs < a.stepMs ? b : a));
    const same = timed.every(({ text }) => text === golden.greedyContinuation.slice(0, tokens));
    const cells = [best.promptMs.toFixed(2).padStart(9), best.stepMs.toFixed(3).padStart(8), (1000 / best.stepMs).toFixed(0).padStart(8)];
    console.log(`${name.padEnd(42)}  ${cells.join('  ')}  ${(same ? 'yes' : 'NO').padEnd(11)}  ${(await promptDiff(model)).toExponential(2)}`);
  } finally {
    model.dispose();
  }
}
process.exit(0);
