// Issue 34's calls for the JS boundary fuzzer (js_boundary_fuzz.mjs): tensors on resizable and
// growable shared buffers; inputs shrunk, transferred or overwritten right after the call, or by a
// later argument's getter while the call checks its arguments (the call must compute on what it
// checked); state dicts with number or Symbol keys (refused) or whose later entry's getter spoils
// an earlier entry (loaded as checked); scalar options float32 cannot hold (refused); and
// saveSafetensors() → loadSafetensors() round trips of odd names and metadata (bit for bit, or a
// typed error from the save).

const FLOAT32_OVERFLOW = [1e39, 3.5e38, 1e300];
const FLOAT32_UNDERFLOW = [1e-46, 1e-300, 5e-324, 2 ** -150];
/** Scalars that float32 rounds to Infinity or 0: every scalar option must refuse them. */
export const EXTREME_SCALARS = [...FLOAT32_OVERFLOW, ...FLOAT32_UNDERFLOW];

/** `values` copied onto a buffer the caller can resize or grow: [array, kind]. */
function onOddBuffer(values, pick) {
  const bytes = values.length * 4;
  const kind = pick(['resizable', 'growableShared']);
  const buffer = kind === 'resizable' ? new ArrayBuffer(bytes, { maxByteLength: bytes + 64 })
    : new SharedArrayBuffer(bytes, { maxByteLength: bytes + 64 });
  const array = new Float32Array(buffer, 0, values.length);
  array.set(values);
  return array;
}

/** Ways to spoil an array after it was checked: shrink (or grow) its buffer, transfer it, overwrite it. */
function spoilArray(array, pick) {
  const buffer = array.buffer;
  const how = pick(['resize', 'transfer', 'overwrite']);
  if (how === 'resize' && buffer.resizable) buffer.resize(0);
  else if (how === 'resize' && buffer.growable) buffer.grow(buffer.maxByteLength);
  else if (how === 'transfer' && !buffer.growable) structuredClone(buffer, { transfer: [buffer] });
  else array.fill(NaN);
}

/** Tensor spoilers (SPOIL_TENSOR's form: [spoiled, still the same tensor]) on resizable and growable buffers. */
export const READ_ONCE_SPOILERS = (pick) => ({
  oddBuffer: (t) => [{ data: onOddBuffer(t.data, pick), shape: t.shape }, true],
  shrunkPastView: (t) => {
    const data = onOddBuffer(t.data, () => 'resizable');
    data.buffer.resize(data.byteLength - 4);
    return [{ data, shape: t.shape }, false];
  },
});

/**
 * A forward() or sdpa call (call(args) → promise) whose first argument is on an odd buffer and is
 * spoiled after it was checked: right after the call is made, or by the last argument's shape
 * getter during the checks. Must give exactly `expected`.
 */
export function spoiledAfterCheckCall(label, call, args, expected, { pick }) {
  const first = onOddBuffer(args[0].data, pick);
  const when = pick(['after the call', 'by a later getter']);
  const last = args[args.length - 1];
  const spoiled = [{ data: first, shape: args[0].shape }, ...args.slice(1, -1),
    when === 'after the call' ? last : { data: last.data, get shape() { spoilArray(first, pick); return last.shape; } }];
  return {
    name: `${label} spoiled ${when}`,
    run: () => {
      const result = call(spoiled);
      if (when === 'after the call') spoilArray(first, pick);
      return result;
    },
    expected,
  };
}

/**
 * loadStateDict() of a module's weights as a Map, into a fresh module of its options (a reload
 * may move the allocator's small blocks, which the fuzzer's memory check would flag): with a
 * number or Symbol key (refused), or with the last entry's getter spoiling the first entry's array.
 * A state dict is read once every getter has run (state_dict.js): a transferred entry is a typed
 * error; an overwritten one is loaded as the getter left it, so the module must then compute
 * exactly what a module given those weights plainly computes (run() sets `expected` to that).
 * forwardArgs: [q, k, v, options].
 */
export function stateDictCall(MultiHeadAttention, { E, options, sd }, forwardArgs, expected, { pick, random }) {
  const entries = Object.entries(sd).map(([name, t]) => [name, { data: t.data.slice(), shape: t.shape }]);
  let name = 'loadStateDict earlier entry spoiled by a later getter';
  if (random() < 0.4) {
    const key = pick([1, Symbol('w'), 0.5]);
    name = `loadStateDict ${typeof key} key`;
    entries.push([key, entries[0][1]]);
  } else {
    const first = entries[0][1].data;
    const [lastName, last] = entries[entries.length - 1];
    entries[entries.length - 1] = [lastName, { data: last.data, get shape() { spoilArray(first, pick); return last.shape; } }];
  }
  const withWeights = async (weights) => {
    const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 2, ...options });
    try {
      mha.loadStateDict(weights);
      return await mha.forward(...forwardArgs);
    } finally {
      mha.dispose();
    }
  };
  const call = {
    name,
    run: async () => {
      const result = await withWeights(new Map(entries));
      // Loaded: the weights as the getters left them, given plainly, must compute the same.
      const plain = entries.map(([key, t]) => [key, { data: t.data.slice(), shape: t.shape }]);
      call.expected = (await withWeights(new Map(plain))).output.data;
      return result;
    },
    expected: name.endsWith('key') ? null : expected,
  };
  return call;
}

/** scaledDotProductAttention() with a scale float32 cannot hold: must be an OptionError. */
export function extremeScaleCall(scaledDotProductAttention, [q, k, v], { pick }) {
  const scale = pick(EXTREME_SCALARS);
  return { name: 'sdpa extreme scale', run: () => scaledDotProductAttention(q, k, v, { scale }), expected: null };
}

const ODD_NAMES = ['__proto__', 'constructor', 'toString', '', ' ', 'a\u0000b', '\uD800', 'x\uDC00y', '\uD83D\uDE00', '"', '\\', '__metadata__'];

/**
 * saveSafetensors() of tensors and metadata with odd names (prototype keys, lone surrogates,
 * pairs, control characters, number and Symbol keys), then loadSafetensors(): either the save is a
 * typed error, or the load gives back every name, every bit and the metadata. The outcome is
 * output [1] (round trip exact) against expected [1].
 */
export function saveLoadCall({ saveSafetensors, loadSafetensors }, { pick, int, random }) {
  const name = () => (random() < 0.6 ? pick(ODD_NAMES) : `t${int(1000)}`);
  const tensors = new Map();
  for (let i = 0, n = 1 + int(4); i < n; i++) {
    const length = int(5);
    const bits = Uint32Array.from({ length }, () => Math.floor(random() * 2 ** 32));
    tensors.set(random() < 0.05 ? pick([1, Symbol('s')]) : name(), random() < 0.3
      ? { data: new Uint16Array(bits.buffer, 0, length), shape: [length], dtype: pick(['float16', 'bfloat16', 'F16', 'BF16']) }
      : { data: new Float32Array(bits.buffer), shape: [length] });
  }
  const metadata = new Map(Array.from({ length: int(3) }, () => [random() < 0.05 ? pick([1, Symbol('m')]) : name(), name()]));
  const sameBits = (a, b) => a.byteLength === b.byteLength
    && new Uint8Array(a.buffer, a.byteOffset, a.byteLength).every((x, i) => x === new Uint8Array(b.buffer, b.byteOffset, b.byteLength)[i]);
  return {
    name: 'saveSafetensors → loadSafetensors',
    run: async () => {
      const back = loadSafetensors(saveSafetensors(tensors, { metadata }), { convert: false });
      const exact = back.size === tensors.size && [...tensors].every(([k, t]) => back.has(k) && sameBits(back.get(k).data, t.data))
        && back.metadata.size === metadata.size && [...metadata].every(([k, v]) => back.metadata.get(k) === v);
      return { output: { data: new Float32Array([exact ? 1 : 0]) } };
    },
    expected: new Float32Array([1]),
  };
}
