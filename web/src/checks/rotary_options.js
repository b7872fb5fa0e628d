// create()'s `rotary` option (docs/attention-math/decoding.md §8): RoPE from a base, with an optional
// frequency scaling, or from a given cos/sin table; resolved and checked, and as the core's
// MhaConfig fields take it (module_config.js's CONFIG_FIELDS lists it).
import { OptionError, describe, formatShape } from '../base/errors.js';
import { checkBoolean, checkOptions, checkPositive, checkSize } from '../base/option_checks.js';
import { checkTensor } from '../base/tensor_checks.js';

const SCALINGS = ['linear', 'llama3'];

/**
 * rotary: null (not given); { base = 10000, interleaved = false, dim = headDim, scaling } with dim
 * even and <= headDim; or { table: { cos, sin }, interleaved, dim? } with cos and sin
 * [positions, dim / 2] (row p: position p). Resolves to { base, interleaved, dim, scaling, table }
 * (base and scaling null with a table; table { cos, sin, positions } or null).
 */
export function resolveRotary(options, { headDim }) {
  if (options.rotary === undefined) return null;
  const r = checkOptions('rotary', options.rotary, ['base', 'interleaved', 'dim', 'scaling', 'table']);
  if (options.rotary === null) {
    throw new OptionError('rotary: expected an options object { base?, interleaved?, dim?, scaling?, table? }, got null', {
      argument: 'rotary', expected: 'object', actual: 'null',
    });
  }
  const interleaved = checkBoolean('rotary.interleaved', r.interleaved, false);
  if (r.table !== undefined) return { base: null, interleaved, ...resolveTable(r, headDim), scaling: null };
  const dim = checkSize('rotary.dim', r.dim, headDim);
  if (dim % 2 !== 0 || dim > headDim) {
    throw new OptionError(`rotary.dim: expected an even integer <= headDim (${headDim}), got ${dim}`, {
      argument: 'rotary.dim', expected: `even, <= ${headDim}`, actual: dim,
    });
  }
  // > 1: the frequencies base^(−2j/dim) must fall with j; a base in (0, 1] gives rising ones, and
  // one near 0 (1e-320) gives infinite angles and NaN outputs (docs/attention-math/decoding.md §8).
  const base = checkPositive('rotary.base', r.base ?? 10000, 1);
  return { base, interleaved, dim, scaling: resolveRotaryScaling(r.scaling), table: null };
}

/** The resolved rotary option as the core's MhaConfig fields (cpp/bindings/embind.cpp). */
export function rotaryCore(r) {
  return {
    rotaryDim: r?.dim ?? 0, rotaryBase: r?.base ?? 10000, rotaryInterleaved: r?.interleaved ?? false,
    // The core's RotaryScaling: 0 none, 1 linear, 2 llama3.
    rotaryScaling: SCALINGS.indexOf(r?.scaling?.type) + 1,
    rotaryFactor: r?.scaling?.factor ?? 1, rotaryLowFreqFactor: r?.scaling?.lowFreqFactor ?? 1,
    rotaryHighFreqFactor: r?.scaling?.highFreqFactor ?? 4, rotaryOriginalMaxPositions: r?.scaling?.originalMaxPositions ?? 8192,
  };
}

// rotary.table { cos, sin }: two Float32Array tensors of one shape [positions, half], half <=
// headDim / 2 (dim, when given, 2·half); no base or scaling beside it. checkTensor() copies
// them: the module keeps its own. Returns { dim, table: { cos, sin, positions } }.
function resolveTable(r, headDim) {
  for (const other of ['base', 'scaling']) {
    if (r[other] !== undefined) {
      throw new OptionError(`rotary.${other}: not with rotary.table (the table gives the angles)`, {
        argument: `rotary.${other}`, expected: 'undefined with a table', actual: describe(r[other]),
      });
    }
  }
  const t = checkOptions('rotary.table', r.table, ['cos', 'sin']);
  const cos = checkTensor('rotary.table.cos', t.cos, { ranks: [2] });
  const sin = checkTensor('rotary.table.sin', t.sin, { ranks: [2] });
  const [positions, half] = cos.shape;
  const expectedDim = r.dim === undefined ? undefined : checkSize('rotary.dim', r.dim);
  if (positions < 1 || half < 1 || 2 * half > headDim || (expectedDim !== undefined && 2 * half !== expectedDim)) {
    const width = expectedDim === undefined ? `a width in [1, headDim / 2 = ${Math.floor(headDim / 2)}]` : `width rotary.dim / 2 = ${expectedDim / 2}`;
    throw new OptionError(`rotary.table.cos: expected [positions >= 1, ${width}], got ${formatShape(cos.shape)}`, {
      argument: 'rotary.table.cos', expected: width, actual: cos.shape,
    });
  }
  if (sin.shape[0] !== positions || sin.shape[1] !== half) {
    throw new OptionError(`rotary.table.sin: expected cos's shape ${formatShape(cos.shape)}, got ${formatShape(sin.shape)}`, {
      argument: 'rotary.table.sin', expected: cos.shape, actual: sin.shape,
    });
  }
  return { dim: 2 * half, table: { cos: cos.data, sin: sin.data, positions } };
}

// rotary.scaling: null (not given), { type: 'linear', factor } or { type: 'llama3', factor,
// lowFreqFactor = 1, highFreqFactor = 4, originalMaxPositions = 8192 } (Llama 3.1's values).
function resolveRotaryScaling(scaling) {
  if (scaling === undefined) return null;
  const s = checkOptions('rotary.scaling', scaling, ['type', 'factor', 'lowFreqFactor', 'highFreqFactor', 'originalMaxPositions']);
  if (scaling === null || !SCALINGS.includes(s.type)) {
    const got = scaling === null ? 'null' : describe(s.type);
    throw new OptionError(`rotary.scaling.type: expected one of ${SCALINGS.map((t) => `'${t}'`).join(', ')}, got ${got}`, {
      argument: 'rotary.scaling.type', expected: SCALINGS, actual: got,
    });
  }
  const factor = checkPositive('rotary.scaling.factor', s.factor);
  if (s.type === 'linear') {
    for (const extra of ['lowFreqFactor', 'highFreqFactor', 'originalMaxPositions']) {
      if (s[extra] !== undefined) {
        throw new OptionError(`rotary.scaling.${extra}: only 'llama3' scaling takes it, got type 'linear'`, {
          argument: `rotary.scaling.${extra}`, expected: "type 'llama3'", actual: 'linear',
        });
      }
    }
    return { type: 'linear', factor };
  }
  const lowFreqFactor = s.lowFreqFactor === undefined ? 1 : checkPositive('rotary.scaling.lowFreqFactor', s.lowFreqFactor);
  const highFreqFactor = s.highFreqFactor === undefined ? 4 : checkPositive('rotary.scaling.highFreqFactor', s.highFreqFactor);
  // Compared as the core stores them: equal float32s would divide by zero in the blend.
  if (Math.fround(highFreqFactor) <= Math.fround(lowFreqFactor)) {
    throw new OptionError(`rotary.scaling.highFreqFactor: expected a number > lowFreqFactor (${lowFreqFactor}), got ${highFreqFactor}`, {
      argument: 'rotary.scaling.highFreqFactor', expected: `> ${lowFreqFactor}`, actual: highFreqFactor,
    });
  }
  const originalMaxPositions = checkSize('rotary.scaling.originalMaxPositions', s.originalMaxPositions, 8192);
  return { type: 'llama3', factor, lowFreqFactor, highFreqFactor, originalMaxPositions };
}
