// Seeded random MHA cases for the differential test: each seed gives one configuration (batch,
// lengths, widths, heads, grouped-query K/V heads, free head dims, kdim / vdim, bias (or one per projection), scale, softcap, sinks, every mask kind alone and together,
// causal, weights averaged or per head, fully masked rows, NaN and ±Infinity in queries, keys and
// additive masks) with its expected result from the float64 reference (reference.mjs), in the
// shape of a decoded fixture case, so runCase() runs it like any other. Values stay finite where
// a NaN would make the row NaN in one implementation and not the other (values: 0 · NaN).
import { mhaReference } from './reference.mjs';
import { randomTensor, rng } from './random.mjs';

const product = (shape) => shape.reduce((a, b) => a * b, 1);

/**
 * One case from `seed`: { name, kind: 'mha', create, stateDict, inputs, options, expected, seed }.
 * finite: no NaN or ±Infinity in inputs or additive masks (-Infinity masking stays), for
 * backends that do not promise NaN rows (WebGPU). weightsDtype: the module's (create()'s option;
 * the expected values are computed from the weights as it stores them, so a state dict of those
 * weights rounded to its 16-bit kind beforehand gives the same). asBefore: below.
 */
export function randomMhaCase(seed, { finite = false, weightsDtype = 'float32', activations = 'float32', asBefore = false } = {}) {
  const next = rng(seed);
  const u = () => next() + 0.5;                       // [0, 1)
  const int = (lo, hi) => lo + Math.floor(u() * (hi - lo + 1));
  const chance = (p) => u() < p;
  // Uniform in [-scale, scale): randomTensor's [-0.5, 0.5) doubled (exactly the same floats).
  const tensor = (shape, scale = 1) => randomTensor(shape, next, 2 * scale);

  // The heads from a generator of their own, its seed hashed: this LCG's first draw for seeds
  // 1…500 lies in [0.24, 0.43), which gave every case 1 or 2 heads. (The first draw is still
  // taken, so that the draws after it stay as they were.) asBefore: the case as it was drawn
  // before that and before grouped queries (a regression seed's).
  const firstDraw = int(1, 4);
  const numHeads = asBefore ? firstDraw : 1 + Math.floor((rng(Math.imul(seed, 0x9e3779b1) >>> 0)() + 0.5) * 4);
  const freeDims = chance(0.3);
  const headDim = freeDims ? int(1, 9) : int(1, 6);
  const embedDim = freeDims ? int(1, 20) : headDim * numHeads;
  const cross = chance(0.4);
  const create = {
    embedDim, numHeads, bias: chance(0.8),
    ...(freeDims ? { headDim, valueHeadDim: int(1, 9) } : {}),
    ...(cross ? { kdim: int(1, 20), vdim: int(1, 20) } : {}),
  };
  const kdim = create.kdim ?? embedDim, vdim = create.vdim ?? embedDim;
  const B = int(1, 3), L = int(1, 19), S = chance(0.3) ? L : int(1, 300 * (chance(0.1) ? 1 : 0.06));
  const self = S === L && !cross && chance(0.5);
  const query = tensor([B, L, embedDim]);
  const key = self ? query : tensor([B, S, kdim]);
  const value = self ? query : (chance(0.3) && kdim === vdim ? key : tensor([B, S, vdim]));
  const options = {};
  if (chance(0.35)) options.keyPaddingMask = randomMask([B, S], u, next, finite);
  if (chance(0.35)) options.attnMask = randomMask(chance(0.5) ? [L, S] : [B * numHeads, L, S], u, next, finite);
  if (chance(0.3)) options.isCausal = true;
  if (chance(0.5)) {
    options.needWeights = true;
    options.averageAttnWeights = chance(0.5);
  }
  // Non-finite inputs: a NaN or ±Infinity in a query or (not shared with the value) key row.
  if (chance(0.15) && query !== value && !finite) sprinkle(query.data, u);
  if (chance(0.1) && key !== value && key !== query && !finite) sprinkle(key.data, u);

  scoreOptions(create, rng(seed + 0x9e3779b9));
  if (!asBefore) groupedQueries(create, rng(seed + 0x3c6ef372));
  const numKvHeads = create.numKvHeads ?? numHeads;

  const stateDict = {};
  const specs = parameterShapes({ embedDim, numHeads, numKvHeads, kdim, vdim, headDim, valueHeadDim: create.valueHeadDim ?? headDim, bias: create.bias, sinks: create.sinks, packed: kdim === embedDim && vdim === embedDim && numHeads * headDim === embedDim && numHeads * (create.valueHeadDim ?? headDim) === embedDim && numKvHeads === numHeads });
  for (const { name, shape } of specs) stateDict[name] = tensor(shape, name === 'sinks' ? 3 : name.includes('bias') ? 0.5 : 0.6);
  if (weightsDtype !== 'float32') create.weightsDtype = weightsDtype;
  if (activations !== 'float32') create.activations = activations;
  const config = { embedDim, numHeads, numKvHeads, kdim, vdim, headDim, valueHeadDim: create.valueHeadDim ?? headDim, scale: create.scale, softcap: create.softcap, weightsDtype, activations };
  const { output, weights, outputSlack } = mhaReference(config, stateDict, query, key, value, options);
  const weightsShape = options.averageAttnWeights === false ? [B, numHeads, L, S] : [B, L, S];
  return {
    name: `random seed ${seed}${weightsDtype === 'float32' ? '' : ` (${weightsDtype} weights${activations === 'float32' ? '' : `, ${activations} activations`})`}`,
    kind: 'mha', seed, create, stateDict,
    inputs: { query, key, value }, options,
    expected: {
      output: { data: output, shape: [B, L, embedDim], ...(outputSlack ? { slack: outputSlack } : {}) },
      ...(weights ? { attnWeights: { data: weights, shape: weightsShape } } : {}),
    },
  };
}

/**
 * The score options and per-projection biases (issue 20), drawn from a generator of their own so
 * that every seed's other draws stay what they were: sometimes a bias per projection, a scale,
 * a softcap (some small enough to bite), attention sinks.
 */
function scoreOptions(create, next) {
  const chance = (p) => next() + 0.5 < p;
  if (create.bias && chance(0.3)) create.bias = { q: chance(0.5), k: chance(0.5), v: chance(0.5), out: chance(0.5) };
  if (chance(0.2)) create.scale = 0.05 + (next() + 0.5) * 2;
  if (chance(0.2)) create.softcap = 0.1 + (next() + 0.5) * 4;
  if (chance(0.2)) create.sinks = true;
}

/**
 * Grouped-query attention (numKvHeads, a divisor of numHeads below it) in about a third of the
 * cases with more than one head, drawn from a generator of its own as scoreOptions' are.
 */
function groupedQueries(create, next) {
  const divisors = [];
  for (let g = 1; g < create.numHeads; g++) if (create.numHeads % g === 0) divisors.push(g);
  if (divisors.length && next() + 0.5 < 0.35) create.numKvHeads = divisors[Math.floor((next() + 0.5) * divisors.length)];
}

/**
 * PyTorch's state-dict entries for these widths (packed in_proj_weight when every width is E and
 * there are as many K/V heads as query heads); the input biases are in_proj_bias when q, k and v
 * all have one, else one entry each. K and V have numKvHeads (G) heads.
 */
export function parameterShapes({ embedDim: E, numHeads: H, numKvHeads: G = H, kdim, vdim, headDim: dk, valueHeadDim: dv, bias, packed, sinks }) {
  const has = typeof bias === 'object' ? bias : { q: bias, k: bias, v: bias, out: bias };
  const specs = packed
    ? [{ name: 'in_proj_weight', shape: [3 * E, E] }]
    : [{ name: 'q_proj_weight', shape: [H * dk, E] }, { name: 'k_proj_weight', shape: [G * dk, kdim] }, { name: 'v_proj_weight', shape: [G * dv, vdim] }];
  if (has.q && has.k && has.v) {
    specs.push({ name: 'in_proj_bias', shape: [H * dk + G * dk + G * dv] });
  } else {
    for (const [p, width] of [['q', H * dk], ['k', G * dk], ['v', G * dv]]) if (has[p]) specs.push({ name: `${p}_proj_bias`, shape: [width] });
  }
  specs.push({ name: 'out_proj.weight', shape: [E, H * dv] });
  if (has.out) specs.push({ name: 'out_proj.bias', shape: [E] });
  if (sinks) specs.push({ name: 'sinks', shape: [H] });
  return specs;
}

/** A boolean (some rows all masked) or additive (finite, -Infinity, sometimes NaN) mask. */
function randomMask(shape, u, next, finite) {
  const n = product(shape);
  const rowLength = shape[shape.length - 1];
  const deadRow = u() < 0.3 ? Math.floor(u() * (n / rowLength)) : -1;  // a row with every key masked
  const masked = (k) => Math.floor(k / rowLength) === deadRow || u() < 0.3;
  if (u() < 0.5) return { data: Uint8Array.from({ length: n }, (_, k) => (masked(k) ? 1 : 0)), shape };
  const nanAt = u() < 0.1 && !finite ? Math.floor(u() * n) : -1;
  return {
    data: Float32Array.from({ length: n }, (_, k) => (k === nanAt ? NaN : masked(k) ? -Infinity : next() * 4)),
    shape,
  };
}

function sprinkle(data, u) {
  const at = Math.floor(u() * data.length);
  data[at] = [NaN, Infinity, -Infinity][Math.floor(u() * 3)];
}
