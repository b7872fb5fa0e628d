// What a module with 16-, 8- or 4-bit storage holds, for the float64 reference (reference.mjs): the
// values its weight matrices and its KV cache rows store, as numbers. docs/attention-math.md
// states the rules: float32 rounded to nearest-even into float16 / bfloat16, int8 as llama.cpp's
// q8_0 (weights: blocks of 32 along the input dimension; cache: one block per (position, K/V
// head) row), int4 weights as llama.cpp's q4_0 (the same blocks). Written from the rules in plain
// arithmetic, sharing no code with the package's
// bit-level conversions (web/src/storage/half_floats.js, q8_0.js; tests/js/narrowing.test.js checks the
// two against each other), and environment-free like the rest of the contract.

/** Significant bits after the point, smallest normal exponent and largest finite value. */
const FORMATS = {
  float16: { mantissa: 10, minExponent: -14, largest: 65504 },
  bfloat16: { mantissa: 7, minExponent: -126, largest: (2 - 2 ** -7) * 2 ** 127 },
};
const Q8_BLOCK = 32;

function roundHalfEven(x) {
  const floor = Math.floor(x);
  const rest = x - floor;
  return rest > 0.5 || (rest === 0.5 && floor % 2 !== 0) ? floor + 1 : floor;
}

/**
 * A float32 value rounded to nearest-even into `dtype` ('float16' | 'bfloat16'), as a number: the
 * nearest multiple of the format's spacing at its exponent (subnormals: at the smallest normal
 * exponent), ties to the even multiple; past the largest finite value after rounding, ±inf.
 */
export function roundToFormat(value, dtype) {
  if (!Number.isFinite(value) || value === 0) return value;
  const { mantissa, minExponent, largest } = FORMATS[dtype];
  const magnitude = Math.abs(value);
  let exponent = Math.floor(Math.log2(magnitude));
  while (2 ** exponent > magnitude) exponent--;
  while (2 ** (exponent + 1) <= magnitude) exponent++;
  const spacing = 2 ** (Math.max(exponent, minExponent) - mantissa);
  const rounded = roundHalfEven(magnitude / spacing) * spacing;
  return Math.sign(value) * (rounded > largest ? Infinity : rounded);
}

/**
 * One q8_0 block (float32 values) as stored: d = fl(max|x| / 127); each x as fl(q · d) with
 * q = fl(x / d) rounded half to even; all zeros when d is 0 (an all-zero block, or one whose max
 * underflows); all NaN when the block holds a NaN or ±inf.
 */
function q8Block(values) {
  if (!values.every(Number.isFinite)) return values.map(() => NaN);
  const d = Math.fround(Math.max(0, ...values.map(Math.abs)) / 127);
  if (d === 0) return values.map(() => 0);
  return values.map((x) => Math.fround(roundHalfEven(Math.fround(x / d)) * d));
}

/**
 * One q4_0 block (float32 values) as stored: m = the first value of largest magnitude, its sign
 * kept; d = fl(m / −8) and id = fl(1 / d); each x is the code q = min(15, trunc(fl(fl(x · id) +
 * 8.5))) (never negative: |x · id| ≤ 8 up to rounding), stored as fl((q − 8) · d); all zeros
 * when d is 0, all NaN when the block holds a NaN or ±inf.
 */
function q4Block(values) {
  if (!values.every(Number.isFinite)) return values.map(() => NaN);
  let m = 0;
  for (const x of values) if (Math.abs(x) > Math.abs(m)) m = x;
  const d = Math.fround(m / -8);
  if (d === 0) return values.map(() => 0);
  const id = Math.fround(1 / d);
  return values.map((x) => {
    const q = Math.min(15, Math.trunc(Math.fround(Math.fround(x * id) + 8.5)));
    return Math.fround((q - 8) * d);
  });
}

const BLOCK_RULES = { int8: q8Block, int4: q4Block };

function roundHalfAway(x) {
  const r = Math.floor(Math.abs(x) + 0.5);  // exact for the |x| ≤ 127 (plus rounding) met here
  return x < 0 ? -r : r;
}

/**
 * A projection's input rows (numbers, rows of `rowLength`; rounded to float32 first, as the core
 * holds them) as create({ activations: 'int8' }) multiplies them, a Float64Array: per block of 32
 * along each row, d = fl(max|x| / 127) and q = round(fl(x / d)) with halves away from zero (llama.cpp's
 * quantize_row_q8_0, d kept in float32), each value q · d exactly; all zeros when d is 0, all NaN
 * when the block holds a NaN or ±inf. The integer block dot products then give Σ_b s_w·d_x·Σ q_w·q_x,
 * which is the float64 product of these values with the stored weights.
 */
export function int8Activations(values, rowLength, blockLength = Q8_BLOCK) {
  const { codes, scales } = int8ActivationCodes(values, rowLength, blockLength);
  return codes.map((q, i) => q * scales[i]);
}

/** int8Activations() as { codes, scales }: each value's code q and its block's d (NaN: a non-finite block). */
export function int8ActivationCodes(values, rowLength, blockLength = Q8_BLOCK) {
  const x = Float64Array.from(values, Math.fround);
  const codes = new Float64Array(x.length), scales = new Float64Array(x.length);
  for (let row = 0; row < x.length; row += rowLength) {
    for (let b = 0; b < rowLength; b += blockLength) {
      const from = row + b, to = row + Math.min(b + blockLength, rowLength);
      const block = x.subarray(from, to);
      const d = block.every(Number.isFinite) ? Math.fround(Math.max(0, ...Array.from(block, Math.abs)) / 127) : NaN;
      for (let i = from; i < to; i++) {
        codes[i] = d > 0 ? Math.min(127, Math.max(-127, roundHalfAway(Math.fround(x[i] / d)))) : 0;
        scales[i] = d;
      }
    }
  }
  return { codes, scales };
}

/**
 * For computed inputs (an attention output, which the core holds in float32 and the reference in
 * float64): d where a value's x / d lies within AMBIGUOUS_CODE of a rounding boundary, so that it
 * may round either way in the core; 0 elsewhere. A test adds Σ_k |w_k| · slack_k to the tolerance
 * of each output such an input feeds (cpp/reference/storage_reference.h says the same).
 */
const AMBIGUOUS_CODE = 0.02;
export function int8ActivationSlack(values, rowLength, blockLength = Q8_BLOCK) {
  const slack = new Float64Array(values.length);
  for (let row = 0; row < values.length; row += rowLength) {
    for (let b = 0; b < rowLength; b += blockLength) {
      const end = row + Math.min(b + blockLength, rowLength);
      let amax = 0;
      for (let i = row + b; i < end; i++) amax = Math.max(amax, Math.abs(values[i]));
      const d = amax / 127;
      if (!(d > 0) || !Number.isFinite(d)) continue;
      for (let i = row + b; i < end; i++) {
        const t = Math.abs(values[i]) / d;
        if (Math.abs(t - Math.floor(t) - 0.5) < AMBIGUOUS_CODE) slack[i] = d;
      }
    }
  }
  return slack;
}

/** `values` as a module with `activations` ('float32' | 'int8') gives them to its weights. */
export function projectionInput(values, rowLength, activations = 'float32') {
  return activations === 'int8' ? int8Activations(values, rowLength) : values;
}

/**
 * `values` (float32 numbers, rows of `rowLength`) as `dtype` storage holds them, a Float64Array:
 * as given ('float32'), rounded to 16 bits, or q8_0 / q4_0 in blocks of `blockLength` along each row.
 */
export function stored(values, dtype, rowLength, blockLength = Q8_BLOCK) {
  if (dtype === 'float32') return values;
  const out = Float64Array.from(values);
  if (dtype in FORMATS) return out.map((x) => roundToFormat(x, dtype));
  const block = BLOCK_RULES[dtype];
  if (!block) throw new Error(`unknown storage dtype ${dtype}`);
  for (let row = 0; row < out.length; row += rowLength) {
    for (let b = 0; b < rowLength; b += blockLength) {
      const end = Math.min(b + blockLength, rowLength);
      out.set(block([...out.subarray(row + b, row + end)]), row + b);
    }
  }
  return out;
}

/**
 * A 16-bit tensor's values as numbers: F16 = sign · (1 + m/1024) · 2^(e−15) (subnormal
 * m/1024 · 2^−14), BF16 = the top half of a float32's bits.
 */
function widened(bits, dtype) {
  if (dtype === 'bfloat16') return new Float32Array(Uint32Array.from(bits, (h) => h << 16).buffer);
  return Float64Array.from(bits, (h) => {
    const sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e === 0x1f) return m ? NaN : sign * Infinity;
    return sign * (e ? (1 + m / 1024) * 2 ** (e - 15) : (m / 1024) * 2 ** -14);
  });
}

/** A state-dict value (a tensor, 16-bit ones too, or a bare Float32Array) as numbers. */
export function floatValues(value) {
  const t = ArrayBuffer.isView(value) ? { data: value } : value;
  const kind = t.dtype ?? t.type;
  if (!(t.data instanceof Uint16Array)) return t.data;
  return widened(t.data, { F16: 'float16', BF16: 'bfloat16' }[kind] ?? kind);
}

/**
 * A state dict as a module of `weightsDtype` stores it: every weight matrix (shape [out, in]:
 * q8_0 and q4_0 blocks run along `in`) replaced by its stored values; vectors (biases, sinks, norm weights)
 * as given (float32).
 */
export function storedStateDict(stateDict, weightsDtype = 'float32') {
  return Object.fromEntries(Object.entries(stateDict).map(([name, t]) => {
    const values = floatValues(t);
    const shape = t.shape ?? t.dims ?? [values.length];
    // The weight matrices only: biases, sinks and norm weights (one dimension) stay float32.
    const isMatrix = shape.length === 2;
    return [name, { data: isMatrix ? stored(values, weightsDtype, shape[shape.length - 1]) : values, shape }];
  }));
}
