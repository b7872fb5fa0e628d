// generate(model, prompt, options): an async iterator over the generated tokens. The prompt is
// one forward (prefill), then each token one forward of that token alone (the KV caches hold the
// rest). Each step says what it cost and, with { attention: true }, where every head of every
// layer looked when it predicted the token.
import { OptionError } from '../src/base/errors.js';
import { makeSampler } from './sampling.js';

/** The last row of a [rows, width] Float64Array. */
const lastRow = (m, width) => m.subarray(m.length - width);

/**
 * Per layer, per head, the weights of the forward's last query over the keys in its window:
 * { keyStart (position of the first), layers: [layer][head] → Float32Array }.
 */
function lastQueryWeights(attention, window) {
  const [, heads, n, T] = attention[0].shape;
  const keyStart = Math.max(0, T - window);
  const layers = attention.map(({ data }) => Array.from({ length: heads },
    (_, h) => data.slice((h * n + n - 1) * T + keyStart, (h * n + n) * T)));
  return { keyStart, layers };
}

/**
 * Yields { id, char, index (0-based), position (of the query that predicted it), ms (time of
 * its forward and sampling), attention (null unless options.attention) } for maxTokens tokens.
 * options: { maxTokens = 200, temperature = 0, topK = 0, seed = 1, attention = false }.
 */
export async function* generate(model, prompt, { maxTokens = 200, attention = false, ...sampling } = {}) {
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new OptionError(`maxTokens: expected an integer >= 1, got ${maxTokens}`, { argument: 'maxTokens', expected: '>= 1', actual: maxTokens });
  }
  const sample = makeSampler(sampling);
  const ids = model.tokenizer.encode(prompt);
  if (ids.length === 0) {
    throw new OptionError('prompt: expected at least one character, got an empty string', { argument: 'prompt', expected: 'non-empty', actual: '' });
  }
  const vocab = model.tokenizer.size;
  model.reset();
  let input = ids;
  for (let index = 0; index < maxTokens; index++) {
    const t0 = performance.now();
    const step = await model.forward(input, { needWeights: attention });
    const id = sample(lastRow(step.logits, vocab));
    const ms = performance.now() - t0;
    yield {
      id,
      char: model.tokenizer.vocab[id],
      index,
      position: model.length - 1,
      ms,
      attention: attention ? lastQueryWeights(step.attention, model.config.window) : null,
    };
    input = [id];
  }
}
