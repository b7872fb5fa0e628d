#!/usr/bin/env node
// Continues a prompt with the committed model, in Node:
//   node web/model/generate.mjs "And God said, " --tokens 200 [--temperature T] [--top-k K] [--seed S] [--threads N]
// The continuation goes to stdout as it is generated; the speed (tokens/s, with the prompt's
// forward counted) and where attention ran go to stderr. Temperature 0 (the default) is greedy.
import { parseArgs } from 'node:util';
import { generate } from './generate.js';
import { loadNodeModel } from './load_node.js';

const USAGE = 'usage: node web/model/generate.mjs PROMPT [--tokens N] [--temperature T] [--top-k K] [--seed S] [--threads N]';

function numberOption(values, name, fallback) {
  if (values[name] === undefined) return fallback;
  const value = Number(values[name]);
  if (values[name].trim() === '' || !Number.isFinite(value)) {
    console.error(`--${name}: expected a number, got '${values[name]}'\n${USAGE}`);
    process.exit(2);
  }
  return value;
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: Object.fromEntries(['tokens', 'temperature', 'top-k', 'seed', 'threads'].map((name) => [name, { type: 'string' }])),
  });
} catch (e) {
  console.error(`${e.message}\n${USAGE}`);
  process.exit(2);
}
const { values, positionals } = parsed;
if (positionals.length !== 1) {
  console.error(USAGE);
  process.exit(2);
}
const options = {
  maxTokens: numberOption(values, 'tokens', 200),
  temperature: numberOption(values, 'temperature', 0),
  topK: numberOption(values, 'top-k', 0),
  seed: numberOption(values, 'seed', 1),
};
const threads = numberOption(values, 'threads', 1);

const model = await loadNodeModel({ threads });
try {
  let ms = 0;
  let count = 0;
  for await (const step of generate(model, positionals[0], options)) {
    // The prompt once it is known to be valid (generate() refuses it before the first token).
    process.stdout.write(step.index === 0 ? positionals[0] + step.char : step.char);
    ms += step.ms;
    count++;
  }
  process.stdout.write('\n');
  console.error(`${count} tokens in ${(ms / 1000).toFixed(3)} s: ${((count * 1000) / ms).toFixed(1)} tokens/s `
    + `(attention on ${model.backend}, ${model.threads} thread${model.threads === 1 ? '' : 's'})`);
} catch (e) {
  console.error(`${e.name}: ${e.message}`);
  process.exitCode = 1;
} finally {
  model.dispose();
}
