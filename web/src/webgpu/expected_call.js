// create({ expect }): the plan of the calls a module is told to expect, for the executor to make
// their buffers and pipelines before the first of them (forward_pass.js reserveBuffers()).

// A tensor as reserveBuffers() reads it: its length and bytes only (nothing is uploaded).
const sized = (length) => ({ length, byteLength: length * 4 });

/**
 * The plan of a plain forward() of expect's shapes ({ L, S, batchSize }, module_config.js's):
 * self-attention where S = L and the module's widths allow it (query, key and value one array),
 * else key and value one array (an encoder's output as both), else three; no masks, no weights.
 */
export function expectedPlan({ L, S, batchSize: B }, config) {
  const { embedDim: E, kdim, vdim } = config;
  const query = sized(B * L * E);
  const self = S === L && kdim === E && vdim === E;
  const key = self ? query : sized(B * S * kdim);
  const value = self || kdim === vdim ? key : sized(B * S * vdim);
  return {
    B, L, S, T: S, query, key, value, keyPaddingMask: { data: null }, attnMask: { data: null },
    isCausal: false, needWeights: false, averageAttnWeights: true, positionIds: null, cache: null, output: 'array',
  };
}
