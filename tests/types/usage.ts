// Compiled with `tsc --noEmit` against the package's own exports: proves web/index.d.ts is valid
// and that the documented API type-checks as a user writes it.
import {
  MultiHeadAttention, scaledDotProductAttention, selfAttention, capabilities, ShapeError,
  WebAttentionError, WorkerError, type Tensor, type StateDict,
} from 'webattention';

async function example(stateDict: StateDict, query: Tensor, key: Tensor, value: Tensor) {
  const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, kdim: 8, bias: false });
  mha.loadStateDict(stateDict);
  const shapes: { name: string; shape: number[] }[] = mha.stateDictShapes;
  const { output, attnWeights } = await mha.forward(query, key, value, {
    keyPaddingMask: { data: new Uint8Array(6), shape: [2, 3] },
    attnMask: { data: new Float32Array(9), shape: [3, 3] },
    isCausal: true,
    needWeights: true,
    averageAttnWeights: false,
  });
  const first: number = output.data[0];
  const weightsShape: number[] | undefined = attnWeights?.shape;
  mha.dispose();

  const pooled = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, threads: 2 });
  const auto = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, threads: 'auto' });
  const threads: number = pooled.threads + auto.threads + (await capabilities()).threads;
  const speedup: number | null = (await capabilities()).relaxedSimdSpeedup;
  const dotSpeedup: number | null = (await capabilities()).relaxedDotSpeedup;
  // @ts-expect-error: threads is not part of the resolved (math) config
  pooled.config.threads;

  const sdpa = await scaledDotProductAttention(query, key, value, { scale: 0.5, isCausal: true });
  const self = await selfAttention(query, { returnWeights: true });
  try {
    await mha.forward(query, key, value);
  } catch (e) {
    if (e instanceof ShapeError) console.log(e.argument, e.expected, e.actual);
    if (e instanceof WebAttentionError) console.log(e.message);
    if (e instanceof WorkerError) console.log('a worker failed; the module carries on on one thread');
  }
  return [shapes, first, weightsShape, sdpa.output, self.attnWeights, threads];
}
example;

// @ts-expect-error: embedDim is required
MultiHeadAttention.create({ numHeads: 2 });
// @ts-expect-error: threads is 'auto' or a number
MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 'max' });

// Readonly shapes (`as const`) are inputs too.
export async function readonlyShapes(): Promise<number[]> {
  const shape = [1, 3, 8] as const;
  const x = { data: new Float32Array(24), shape } as const;
  const { output } = await selfAttention({ data: new Float32Array(24), shape: [3, 8] as const });
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2 });
  const result = await mha.forward(x, x, x);
  mha.dispose();
  return [...output.shape, ...result.output.shape];
}
