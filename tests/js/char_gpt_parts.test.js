// The char-level GPT runner's parts that do not need the model (web/model/): the float64 erf of
// its exact GELU, the sampler and the tokenizer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OptionError } from '#webattention';
import { erf } from '../../web/model/erf.js';
import { argmax, makeSampler, seededRandom } from '../../web/model/sampling.js';
import { Tokenizer } from '../../web/model/tokenizer.js';

// Python's math.erf (correctly rounded to within an ulp or so), on both expansions and the switch.
const ERF = [
  [0.0, 0.0], [1e-08, 1.1283791670955126e-08], [0.1, 0.1124629160182849], [0.5, 0.5204998778130465],
  [0.84375, 0.7672256612323416], [1.0, 0.8427007929497149], [1.25, 0.9229001282564582], [2.0, 0.9953222650189527],
  [2.5, 0.999593047982555], [2.99, 0.9999764743969194], [3.0, 0.9999779095030014], [3.5, 0.9999992569016276],
  [4.0, 0.9999999845827421], [5.5, 0.9999999999999927], [-0.3, -0.3286267594591274], [-1.7, -0.9837904585907745],
  [-3.2, -0.9999939742388483], [-6.0, -1.0],
];

test('erf: within 1.6e-15 (a few ulps) of math.erf; the negative tail 1 + erf(x) = erfc(|x|)', () => {
  for (const [x, expected] of ERF) {
    assert.ok(Math.abs(erf(x) - expected) <= 1.6e-15, `erf(${x}) = ${erf(x)}, expected ${expected}`);
  }
  // GELU uses 1 + erf(z/√2): for negative z only erfc matters, to an absolute 1e-16.
  assert.ok(Math.abs(1 + erf(-3.2) - 6.025761151762088e-06) < 1e-16);
  assert.ok(Math.abs(1 + erf(-4.5) - 1.9661604415428873e-10) < 1e-16);
  assert.equal(erf(Infinity), 1);
  assert.equal(erf(-Infinity), -1);
  assert.ok(Number.isNaN(erf(NaN)));
});

test('sampler: greedy is argmax (first on ties); top-k 1 is greedy; draws repeat with the seed and stay in the top k', () => {
  const row = Float64Array.from([0.5, 2, -1, 2, 1.5, 0]);
  assert.equal(argmax(row), 1);
  assert.equal(makeSampler()(row), 1);
  assert.equal(makeSampler({ temperature: 5, topK: 1, seed: 9 })(row), 1);
  const draws = (seed) => { const s = makeSampler({ temperature: 1, topK: 3, seed }); return Array.from({ length: 200 }, () => s(row)); };
  assert.deepEqual(draws(3), draws(3));
  assert.notDeepEqual(draws(3), draws(4));
  assert.deepEqual(new Set(draws(3)), new Set([1, 3, 4]));
  // The draws follow softmax(logits / temperature) over the top k: e² : e² : e^1.5 at temperature 1.
  const sampler = makeSampler({ temperature: 1, topK: 3, seed: 11 });
  const counts = new Map();
  for (let i = 0; i < 4000; i++) { const id = sampler(row); counts.set(id, (counts.get(id) ?? 0) + 1); }
  const z = 2 * Math.exp(2) + Math.exp(1.5);
  for (const [id, logit] of [[1, 2], [3, 2], [4, 1.5]]) {
    const share = counts.get(id) / 4000;
    assert.ok(Math.abs(share - Math.exp(logit) / z) < 0.03, `token ${id}: drawn ${share}, expected ${Math.exp(logit) / z}`);
  }
  // A high temperature without top-k spreads the draws over every token.
  const hot = makeSampler({ temperature: 100, seed: 1 });
  assert.equal(new Set(Array.from({ length: 400 }, () => hot(row))).size, row.length);
  const random = seededRandom(1);
  const u = Array.from({ length: 1000 }, random);
  assert.ok(u.every((v) => v >= 0 && v < 1));
  assert.ok(Math.abs(u.reduce((a, b) => a + b) / u.length - 0.5) < 0.05);
  for (const [options, argument] of [[{ temperature: -1 }, 'temperature'], [{ topK: 1.5 }, 'topK'], [{ seed: 'x' }, 'seed']]) {
    assert.throws(() => makeSampler(options), (e) => e instanceof OptionError && e.argument === argument);
  }
});

test('tokenizer: ids are vocabulary indices; a character outside it is an OptionError naming it', () => {
  const t = new Tokenizer('\n abc');
  assert.equal(t.size, 5);
  assert.deepEqual(t.encode('ab c\n'), [2, 3, 1, 4, 0]);
  assert.equal(t.decode([2, 3, 1, 4, 0]), 'ab c\n');
  assert.throws(() => t.encode('abd'), (e) => e instanceof OptionError && e.argument === 'prompt' && /"d" at 2/.test(e.message));
});
