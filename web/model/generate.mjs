#!/usr/bin/env node
// Continues a prompt with the committed model, in Node:
//   node web/model/generate.mjs "And God said, " [--tokens N] [--temperature T] [--top-k K] [--greedy] [--seed S] [--threads N|auto]
//                               [--weights-dtype D] [--cache-dtype D]
// The continuation goes to stdout as it is generated; the speed (tokens/s, with the prompt's
// forward counted) and where attention ran go to stderr. It samples by default (temperature 0.8,
// top-k 20, as the demo page does: greedy decoding of this small model soon repeats itself);
// --greedy takes the most likely character each time. Every bad value is one line on stderr.
import { parseArgs } from 'node:util';
import { generate } from './generate.js';
import { SAMPLING_DEFAULTS } from './sampling.js';
import { loadNodeModel } from './load_node.js';

const USAGE = `usage: node web/model/generate.mjs "PROMPT" [--tokens N] [--temperature T] [--top-k K] [--greedy] [--seed S] [--threads N|auto]
                                   [--weights-dtype D] [--cache-dtype D]
  PROMPT           the text to continue, in quotes (one argument)
  --tokens N       characters to generate (default 200)
  --temperature T  sampling temperature > 0 (default ${SAMPLING_DEFAULTS.temperature})
  --top-k K        sample among the K most likely characters; 0: all (default ${SAMPLING_DEFAULTS.topK})
  --greedy         the most likely character each time (no temperature or top-k)
  --seed S         the sampling's seed, an integer (default ${SAMPLING_DEFAULTS.seed})
  --threads N      attention threads: an integer >= 1, or auto (default 1)
  --weights-dtype D  the attention weights' storage: float32, float16, bfloat16 or int8 (default float32)
  --cache-dtype D    the KV caches' storage: float32, float16 or int8 (default float32)`;

/** Exits with one line (and where it helps, the usage) on stderr. */
function fail(message, withUsage = false) {
  console.error(withUsage ? `${message}\n${USAGE}` : `${message} (--help for usage)`);
  process.exit(2);
}

/** --name as a number passing `ok`, or the fallback when not given. */
function numberOption(values, name, fallback, ok, expected) {
  if (values[name] === undefined) return fallback;
  const value = Number(values[name]);
  if (values[name].trim() === '' || !ok(value)) fail(`--${name}: expected ${expected}, got '${values[name]}'`);
  return value;
}

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      ...Object.fromEntries(['tokens', 'temperature', 'top-k', 'seed', 'threads', 'weights-dtype', 'cache-dtype'].map((name) => [name, { type: 'string' }])),
      greedy: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
} catch (e) {
  fail(e.message);
}
const { values, positionals } = parsed;
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (positionals.length === 0) fail('a prompt is needed', true);
if (positionals.length > 1) {
  fail(`expected one prompt, got ${positionals.length} words: put the prompt in quotes, e.g. "${positionals.join(' ')}"`);
}
const isInteger = (min) => (n) => Number.isInteger(n) && n >= min;
if (values.greedy && (values.temperature !== undefined || values['top-k'] !== undefined)) {
  fail('--greedy takes the most likely character: --temperature and --top-k do not apply to it');
}
const options = {
  maxTokens: numberOption(values, 'tokens', 200, isInteger(1), 'an integer >= 1'),
  temperature: values.greedy ? 0 : numberOption(values, 'temperature', SAMPLING_DEFAULTS.temperature, (n) => Number.isFinite(n) && n > 0,
    'a finite number > 0 (for greedy decoding, --greedy)'),
  topK: values.greedy ? 0 : numberOption(values, 'top-k', SAMPLING_DEFAULTS.topK, isInteger(0), 'an integer >= 0 (0: all characters)'),
  seed: numberOption(values, 'seed', SAMPLING_DEFAULTS.seed, Number.isSafeInteger, 'an integer'),
};
const threads = values.threads === 'auto' ? 'auto' : numberOption(values, 'threads', 1, isInteger(1), "an integer >= 1 or 'auto'");

let model;
try {
  // The package checks the dtypes (an OptionError naming the option and its choices).
  model = await loadNodeModel({ threads, weightsDtype: values['weights-dtype'], cacheDtype: values['cache-dtype'] });
} catch (e) {
  fail(`${e.name}: ${e.message}`);
}
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
    + `(attention on ${model.backend}, ${model.threads} thread${model.threads === 1 ? '' : 's'}, `
    + `${values['weights-dtype'] ?? 'float32'} weights, ${values['cache-dtype'] ?? 'float32'} cache)`);
} catch (e) {
  console.error(`${e.name}: ${e.message}`);
  process.exitCode = 1;
} finally {
  model.dispose();
}
