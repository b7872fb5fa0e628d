// loadStateDict({ layout }) refusing what does not fit (issue 20): a bias the module lacks or a
// missing one (the message names the bias option that fits), q_norm/k_norm without qkNorm,
// sinks, another layout's keys (the message names that layout), two keys for one weight, a packed
// key where the module's input widths differ, an untransposed Conv1D weight. Each is a typed
// error naming the key, and the module stays usable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, OptionError, StateDictError } from '#webattention';
import { filled } from '../contract/random.mjs';

const E = 8;
const tensor = (shape, seed = 1) => ({ data: filled(shape.reduce((a, b) => a * b, 1), seed, 0.3), shape });

/** A Hugging Face attention block's state dict ({ q, k, v, o } biases as asked). */
function hfStateDict(prefix = '', biases = '') {
  const sd = {};
  for (const p of ['q', 'k', 'v', 'o']) {
    sd[`${prefix}${p}_proj.weight`] = tensor([E, E], p.charCodeAt(0));
    if (biases.includes(p)) sd[`${prefix}${p}_proj.bias`] = tensor([E], p.charCodeAt(0) + 100);
  }
  return sd;
}

/** `call` throws a `Class` whose argument is `argument` and whose message has every part. */
const refuses = (call, Class, argument, parts) => assert.throws(call, (e) => e instanceof Class && e.argument === argument
  && parts.every((part) => e.message.includes(part)) || assert.fail(`${e?.name} ${e?.argument}: ${e?.message}`));

async function withModule(create, body) {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, ...create });
  try {
    await body(mha);
  } finally {
    mha.dispose();
  }
}

const forwardRuns = async (mha) => {
  const x = { data: filled(3 * E, 9), shape: [3, E] };
  assert.equal((await mha.forward(x, x, x)).output.data.length, 3 * E);
};

test('a bias the module lacks, and one the file lacks: StateDictError naming the key and the bias option that fits', () => withModule({ bias: false }, async (mha) => {
  refuses(() => mha.loadStateDict(hfStateDict('m.', 'qkv'), { layout: 'hf', prefix: 'm.' }), StateDictError, 'm.q_proj.bias',
    ["'m.q_proj.bias'", 'bias: { q: true, k: false, v: false, out: false }']);
  mha.loadStateDict(hfStateDict('m.'), { layout: 'hf', prefix: 'm.' });
  await forwardRuns(mha);
  await withModule({ bias: { q: true, k: true, v: true } }, async (qwen) => {
    refuses(() => qwen.loadStateDict(hfStateDict('', 'qv'), { layout: 'hf' }), StateDictError, 'k_proj.bias',
      ["missing key 'k_proj.bias'", `[${E}]`, 'bias: { q: true, k: false, v: true, out: false }']);
    qwen.loadStateDict(hfStateDict('', 'qkv'), { layout: 'hf' });
    await forwardRuns(qwen);
  });
}));

test('sinks the module lacks, and sinks a layout cannot give: StateDictError naming the sinks option', async () => {
  await withModule({ bias: false }, (mha) => {
    refuses(() => mha.loadStateDict({ ...hfStateDict(), sinks: tensor([2]) }, { layout: 'hf' }), StateDictError, 'sinks', ['sinks: true']);
  });
  await withModule({ sinks: true }, (oss) => {
    refuses(() => oss.loadStateDict(hfStateDict('', 'qkvo'), { layout: 'hf' }), StateDictError, 'sinks', ["missing key 'sinks'", '[2]', 'sinks: false']);
    const gpt2 = { 'c_attn.weight': tensor([E, 3 * E]), 'c_attn.bias': tensor([3 * E]), 'c_proj.weight': tensor([E, E]), 'c_proj.bias': tensor([E]) };
    refuses(() => oss.loadStateDict(gpt2, { layout: 'gpt2' }), StateDictError, 'sinks', ["layout 'gpt2' has no sinks", 'sinks: false']);
  });
});

test('q_norm / k_norm: refused by a module without qkNorm (naming it), named with their shape when missing', async () => {
  await withModule({ bias: false }, (mha) => {
    const sd = { ...hfStateDict(), 'q_norm.weight': tensor([4]) };
    refuses(() => mha.loadStateDict(sd, { layout: 'hf' }), StateDictError, 'q_norm.weight', ['qkNorm']);
    refuses(() => mha.loadStateDict(sd, { layout: 'hf', strict: false }), StateDictError, 'q_norm.weight', ['qkNorm']);
  });
  await withModule({ bias: false, qkNorm: {} }, async (qwen3) => {
    refuses(() => qwen3.loadStateDict({ ...hfStateDict(), 'q_norm.weight': tensor([4]) }, { layout: 'hf' }), StateDictError, 'k_norm.weight',
      ["missing key 'k_norm.weight'", '[4]', 'without qkNorm']);
    qwen3.loadStateDict({ ...hfStateDict(), 'q_norm.weight': tensor([4]), 'k_norm.weight': tensor([4], 2) }, { layout: 'hf' });
    await forwardRuns(qwen3);
  });
});

test("another layout's keys: the message names the layout that takes them; unknown ones suggest strict: false", () => withModule({}, (mha) => {
  const torch = { in_proj_weight: tensor([3 * E, E]), in_proj_bias: tensor([3 * E]), 'out_proj.weight': tensor([E, E]), 'out_proj.bias': tensor([E]) };
  refuses(() => mha.loadStateDict(torch, { layout: 'hf' }), StateDictError, 'in_proj_weight', ["layout: 'torch'"]);
  refuses(() => mha.loadStateDict(hfStateDict('', 'qkvo')), StateDictError, 'q_proj.weight', ["layout: 'hf'"]);
  refuses(() => mha.loadStateDict({ ...hfStateDict('', 'qkvo'), 'mlp.up.weight': tensor([2]) }, { layout: 'hf' }), StateDictError,
    'mlp.up.weight', ['strict: false']);
  mha.loadStateDict({ ...hfStateDict('', 'qkvo'), 'mlp.up.weight': tensor([2]) }, { layout: 'hf', strict: false });
  refuses(() => mha.loadStateDict(torch, { layout: 'llama' }), OptionError, 'layout', ["'hf'", 'llama']);
}));

test('two keys for one weight (q_proj and qkv_proj), a packed key over differing input widths, an untransposed Conv1D', async () => {
  await withModule({}, (mha) => {
    const both = { ...hfStateDict('', 'qkvo'), 'qkv_proj.weight': tensor([3 * E, E]) };
    refuses(() => mha.loadStateDict(both, { layout: 'hf' }), StateDictError, 'qkv_proj.weight', ['q_proj.weight', 'qkv_proj.weight']);
    const gpt2 = { 'c_attn.weight': tensor([3 * E, E]), 'c_attn.bias': tensor([3 * E]), 'c_proj.weight': tensor([E, E]), 'c_proj.bias': tensor([E]) };
    refuses(() => mha.loadStateDict(gpt2, { layout: 'gpt2' }), StateDictError, 'c_attn.weight', [`[${E}, ${3 * E}]`, `[${3 * E}, ${E}]`]);
    mha.loadStateDict({ ...gpt2, 'c_attn.weight': tensor([E, 3 * E]) }, { layout: 'gpt2' });
    return forwardRuns(mha);
  });
  await withModule({ kdim: 5 }, (cross) => {
    const packed = { 'qkv_proj.weight': tensor([3 * E, E]), 'o_proj.weight': tensor([E, E]) };
    refuses(() => cross.loadStateDict(packed, { layout: 'hf' }), StateDictError, 'qkv_proj.weight', ['kdim']);
  });
});

test("bert: the block's own prefix, the LayerNorm beside it ignored with strict: false, missing keys named as BERT names them", () => withModule({}, async (mha) => {
  const p = 'bert.encoder.layer.3.attention.';
  const sd = {};
  for (const [name, shape] of [['self.query', [E, E]], ['self.key', [E, E]], ['self.value', [E, E]], ['output.dense', [E, E]]]) {
    sd[`${p}${name}.weight`] = tensor(shape, name.length);
    sd[`${p}${name}.bias`] = tensor([E], name.length + 1);
  }
  sd[`${p}output.LayerNorm.weight`] = tensor([E]);
  mha.loadStateDict(sd, { layout: 'bert', prefix: p, strict: false });
  await forwardRuns(mha);
  const { [`${p}self.key.weight`]: _, ...missing } = sd;
  refuses(() => mha.loadStateDict(missing, { layout: 'bert', prefix: p, strict: false }), StateDictError, `${p}self.key.weight`,
    [`missing key '${p}self.key.weight'`, `[${E}, ${E}]`]);
}));
