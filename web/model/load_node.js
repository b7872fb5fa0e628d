// The committed model in Node: the weights file beside this one, the package's Node entry.
import { readFile } from 'node:fs/promises';
import { CharGpt } from './char_gpt.js';

export const MODEL_FILE = new URL('./model.safetensors', import.meta.url);

/** CharGpt.load() of model.safetensors; options: { threads, backend, weightsDtype, activations, cacheDtype }. */
export async function loadNodeModel(options) {
  const api = await import('../src/node.js');
  return CharGpt.load(api, await readFile(MODEL_FILE), options);
}
