// Prefill with int8 activations against float32, shared by Node (bench/prefill/prefill_activations.mjs)
// and the browser page (bench/browser/suite.html?suite=prefill_activations, runPrefillActivationsPage()):
// one uncached self-attention forward of L rows (causal) per variant, one thread, the variants
// interleaved round by round so that a slow spell of the machine hits them alike. The library
// comes in as an argument; Node adds each variant's projection alone (a hook of its own, through
// the package's internals), which a page cannot reach.
import { HEAD_DIM, makeDecodeWeights, stateDict } from '../decode/decode_suite.mjs';
import { filled } from '../lib/suite.mjs';

/** The variants timed: create() options beside the shape. */
export const VARIANTS = {
  f32: { name: 'f32', options: {} },
  int8: { name: 'int8', options: { weightsDtype: 'int8' } },
  int4: { name: 'int4', options: { weightsDtype: 'int4' } },
  i8a8: { name: 'int8 + act8', options: { weightsDtype: 'int8', activations: 'int8' } },
  i4a8: { name: 'int4 + act8', options: { weightsDtype: 'int4', activations: 'int8' } },
};

/** '768,12,12;2048,32,8' → [[E, h, hkv], ...], each E = h · HEAD_DIM (decode_suite.mjs's weights); throws otherwise. */
export function parseConfigs(text) {
  const configs = text.split(';').map((c) => c.split(',').map(Number));
  for (const [E, h, hkv] of configs) {
    if (!(E === h * HEAD_DIM && Number.isInteger(hkv) && hkv > 0 && h % hkv === 0)) {
      throw new Error(`--configs: expected E,h,hkv with E = h · ${HEAD_DIM} and hkv dividing h, got ${[E, h, hkv]}`);
    }
  }
  return configs;
}

/** VARIANTS keys → variants, f32 first; throws on an unknown name. */
export function parseVariants(text) {
  const names = text.split(',');
  if (names[0] !== 'f32') throw new Error(`--variants: f32 comes first (the reference), got '${text}'`);
  return names.map((name) => VARIANTS[name] ?? (() => { throw new Error(`--variants: unknown '${name}'`); })());
}

/** Q and O are E × E, K and V E × hkv·d: the four projections' weights in units of O's. */
export const projectionsPerOutput = (E, hkv) => (2 * E + 2 * hkv * HEAD_DIM) / E;

const timed = async (fn) => {
  const start = performance.now();
  await fn();
  return performance.now() - start;
};

/**
 * Times one configuration. builds: [{ label, MultiHeadAttention, projector? }] (the first is this
 * package; a second, labelled, another build whose variants but f32 are timed too); projector(shape,
 * weights, L) → { project(), dispose() } times the output projection alone where given.
 * Resolves to [{ name, ms: [per round], projMs: [per round] | null }], f32 first.
 */
export async function timePrefillConfig(builds, { E, h, hkv, L, rounds, variants }) {
  const x = { data: filled(L * E, 7 + E, 1), shape: [1, L, E] };
  const weights = makeDecodeWeights({ E, h, hkv });
  const runs = [];
  try {
    for (const build of builds) for (const { name, options } of variants) {
      if (build.label && name === 'f32') continue;
      const shape = { embedDim: E, numHeads: h, numKvHeads: hkv, ...options };
      const mha = await build.MultiHeadAttention.create({ ...shape, threads: 1, backend: 'wasm' });
      mha.loadStateDict(stateDict(mha.stateDictShapes, weights));
      const projector = build.projector?.(shape, weights, L) ?? null;
      const run = { name: build.label + name, mha, projector, ms: [], projMs: projector ? [] : null };
      runs.push(run);
      run.forward = () => mha.forward(x, x, x, { isCausal: true });
      for (let i = 0; i < 2; i++) { await run.forward(); projector?.project(); }  // the engine optimises the kernels
    }
    for (let round = 0; round < rounds; round++) {
      for (const run of runs) {
        run.ms.push(await timed(run.forward));
        if (run.projector) run.projMs.push(await timed(run.projector.project));
      }
    }
    return runs.map(({ name, ms, projMs }) => ({ name, ms, projMs }));
  } finally {
    for (const run of runs) { run.mha.dispose(); run.projector?.dispose(); }
  }
}

/** The page's run (bench/browser/suite.html?suite=prefill_activations): ?configs=&length=&rounds=&variants=. */
export async function runPrefillActivationsPage({ MultiHeadAttention }, q, log) {
  const configs = parseConfigs(q.get('configs') ?? '768,12,12');
  const variants = parseVariants(q.get('variants') ?? 'f32,i8a8,i4a8');
  const L = Number(q.get('length') ?? 512), rounds = Number(q.get('rounds') ?? 7);
  const results = [];
  for (const [E, h, hkv] of configs) {
    log(`(${E}, ${h}, ${hkv}), L ${L}: ${rounds} rounds of ${variants.length} variants`);
    results.push({ E, h, hkv, L, rows: await timePrefillConfig([{ label: '', MultiHeadAttention }], { E, h, hkv, L, rounds, variants }) });
  }
  return { results };
}
