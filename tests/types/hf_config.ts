// MultiHeadAttention.fromConfig() and attentionOptionsFromConfig() as index.d.ts types them.
import { MultiHeadAttention, attentionOptionsFromConfig, loadSafetensors } from 'webattention';
import type { CheckpointInfo, FromConfigResult, HfConfig } from 'webattention';

declare const config: HfConfig;
declare const bytes: Uint8Array;

const mapped: FromConfigResult = attentionOptionsFromConfig(config, { layer: 3 });
const layout: 'hf' | 'gpt2' | 'bert' = mapped.load.layout;
const window: number | null = mapped.window;
const created: Promise<MultiHeadAttention> = MultiHeadAttention.create({ ...mapped.options, threads: 1 });

async function load(): Promise<void> {
  const mha = await MultiHeadAttention.fromConfig(config, { layer: 3, prefix: 'model.layers.3.self_attn.', weightsDtype: 'float16', backend: 'wasm' });
  const info: CheckpointInfo | null = mha.checkpoint;
  mha.loadStateDict(loadSafetensors(bytes), { strict: false });
  if (info?.window) mha.createCache({ window: info.window });
  // @ts-expect-error: the layer is required.
  await MultiHeadAttention.fromConfig(config, {});
  // @ts-expect-error: create()'s sizes come from the config, not beside it.
  await MultiHeadAttention.fromConfig(config, { layer: 0, embedDim: 16 });
}

export { created, layout, load, window };
