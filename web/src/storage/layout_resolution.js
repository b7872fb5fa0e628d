// How loadStateDict(sd, { layout }) maps a state dict in a checkpoint's naming (checkpoint_layouts.js's
// LAYOUT_KEYS) onto the module's entries: the keys checked under their own names (shape, dtype,
// missing, unexpected), then copied into the module's own entries, or stacked as quantised
// blocks. Reached through base/lazy_modules.js: a load in PyTorch's naming never runs it.
import { StateDictError, formatShape } from '../base/errors.js';
import { ENTRY } from './state_dict_entries.js';
import { LAYOUT_KEYS, PASSED_OVER, QKV_BIASES as biases, QKV_WEIGHTS as weights, otherLayoutHint } from './checkpoint_layouts.js';
import { isQuantisedEntry } from './quantised_entries.js';
import { quantisedRows, stackQuantised } from './quantised_tensors.js';

// The module's entries of one of them each.
const SEPARATE_WEIGHTS = [ENTRY.qProjWeight, ENTRY.kProjWeight, ENTRY.vProjWeight];
const SEPARATE_BIASES = [ENTRY.qProjBias, ENTRY.kProjBias, ENTRY.vProjBias];

/**
 * The module's parts from its entries (specs [{ name, shape }]): part → { entry, offset (floats),
 * rows, cols }; a bias has cols 0. Parts of biases the module lacks are absent.
 */
function moduleParts(specs) {
  const shapes = Object.fromEntries(specs.map((s) => [s.name, s.shape]));
  const parts = {};
  const stack = (entry, names, rowsOf, cols) => {
    let offset = 0;
    names.forEach((part, i) => {
      parts[part] = { entry, offset, rows: rowsOf[i], cols: cols[i] };
      offset += rowsOf[i] * (cols[i] || 1);
    });
  };
  // An entry of one part: a matrix [rows, cols] or a vector [rows] (cols 0).
  const single = (entry, part) => {
    if (shapes[entry]) stack(entry, [part], [shapes[entry][0]], [shapes[entry][1] ?? 0]);
  };
  if (shapes[ENTRY.inProjWeight]) {
    const [rows3, E] = shapes[ENTRY.inProjWeight];
    stack(ENTRY.inProjWeight, weights, [rows3 / 3, rows3 / 3, rows3 / 3], [E, E, E]);
  }
  SEPARATE_WEIGHTS.forEach((entry, i) => single(entry, weights[i]));
  const rows = weights.map((w) => parts[w].rows);
  if (shapes[ENTRY.inProjBias]) stack(ENTRY.inProjBias, biases, rows, [0, 0, 0]);
  SEPARATE_BIASES.forEach((entry, i) => single(entry, biases[i]));
  single(ENTRY.outProjWeight, 'out.weight');
  single(ENTRY.outProjBias, 'out.bias');
  single(ENTRY.sinks, 'sinks');
  single(ENTRY.qNormWeight, 'q_norm');
  single(ENTRY.kNormWeight, 'k_norm');
  return parts;
}

/**
 * The create() option that would have (on) or not have (off) `part`: the module's bias flags
 * with that one changed, or sinks.
 */
function optionFor(parts, part, on) {
  if (part === 'sinks') return `create({ sinks: ${on} })`;
  if (part.endsWith('_norm')) return on ? 'create({ qkNorm: { eps } })' : 'create() without qkNorm';
  const flag = part.split('.')[0];
  const flags = ['q', 'k', 'v', 'out'].map((f) => `${f}: ${f === flag ? on : `${f}.bias` in parts}`);
  return `create({ bias: { ${flags.join(', ')} } })`;
}

/** The shape a key of `parts` has in the file, or a reason it cannot fit this module. */
function keyShape(key, parts) {
  const own = key.parts.map((p) => parts[p]);
  if (own[0].cols === 0) return { shape: [own.reduce((n, p) => n + p.rows, 0)] };
  if (own.some((p) => p.cols !== own[0].cols)) {
    return { reason: `packs ${key.parts.join(', ')}, whose input widths differ in this module (kdim, vdim != embedDim); give them apart` };
  }
  const rows = own.reduce((n, p) => n + p.rows, 0);
  return { shape: key.conv1d ? [own[0].cols, rows] : [rows, own[0].cols] };
}

// A key the layout does not know: which layout would take it, or strict: false.
function unexpectedKey(name, local, layout, known) {
  const hint = otherLayoutHint(local, layout) || ' (the rest of a model? loadStateDict(sd, { strict: false }) ignores it)';
  return new StateDictError(`stateDict: unexpected key '${name}' for layout '${layout}'${hint}; expected keys: ${known.join(', ')}`,
    { argument: name, expected: known, actual: name });
}

/**
 * Maps a state dict in `layout`'s naming onto the module's entries. entries: Map of the caller's
 * keys; checkEntry(name, shape, value, conv1d) → Float32Array of the checked tensor ([in, out]
 * where conv1d). Returns
 * [{ name, data }] in specs' order.
 */
export function resolveLayout(specs, entries, { prefix, strict, layout }, checkEntry) {
  const parts = moduleParts(specs);
  const keys = LAYOUT_KEYS[layout];
  const given = [];
  for (const [name, value] of entries) {
    const local = name.startsWith(prefix) ? name.slice(prefix.length) : null;
    const key = keys.find((k) => k.name === local);
    if (!key && PASSED_OVER[layout]?.(local)) continue;
    if (!key || !key.parts.every((p) => p in parts)) {
      const known = keys.filter((k) => k.parts.every((p) => p in parts)).map((k) => prefix + k.name);
      if (key) {
        const part = key.parts.find((p) => !(p in parts));
        const what = part === 'sinks' ? 'attention sinks' : part.endsWith('_norm') ? 'a qk-norm weight (Qwen3, Gemma 3)' : 'a bias';
        throw new StateDictError(`stateDict: '${name}' is ${what} this module was created without; `
          + `${optionFor(parts, part, true)} takes it`, { argument: name, expected: known, actual: name });
      }
      if (strict) throw unexpectedKey(name, local ?? name, layout, known);
      continue;
    }
    const { shape, reason } = keyShape(key, parts);
    if (reason) throw new StateDictError(`stateDict: '${name}' ${reason}`, { argument: name, expected: 'separate keys', actual: name });
    given.push({ key, name, data: checkEntry(name, shape, value, key.conv1d), rows: shape[key.conv1d ? 1 : 0] });
  }
  // Made for the entries whose parts come as floats (a quantised entry needs none).
  const out = {};
  const target = (entry) => (out[entry] ??= new Float32Array(specs.find((s) => s.name === entry).shape.reduce((a, b) => a * b, 1)));
  const source = {};  // part → the key that gave it
  const blocks = {};  // part → its rows of a quantised key
  for (const { key, name, data, rows } of given) {
    let row0 = 0;
    for (const part of key.parts) {
      if (source[part]) {
        throw new StateDictError(`stateDict: both '${source[part]}' and '${name}' give ${part}; expected one of them`,
          { argument: name, expected: source[part], actual: [source[part], name] });
      }
      source[part] = name;
      const p = parts[part];
      if (isQuantisedEntry(data)) blocks[part] = { ...quantisedRows(data, row0, p.rows, p.cols), name };
      else copyPart(data, p, row0, rows, key.conv1d, target(p.entry));
      row0 += p.rows;
    }
  }
  for (const part of Object.keys(parts)) {
    if (!source[part]) throw missingPart(part, parts, keys, prefix, layout);
  }
  return specs.map(({ name }) => quantisedSpec(name, parts, blocks) ?? { name, data: target(name) });
}

/**
 * Entry `name` stacked from its parts' quantised rows, in its row order; null where none of its
 * parts came quantised. Parts of one entry are all quantised blocks of one kind, or none are.
 */
function quantisedSpec(name, parts, blocks) {
  const own = Object.keys(parts).filter((p) => parts[p].entry === name).sort((a, b) => parts[a].offset - parts[b].offset);
  const given = own.filter((p) => blocks[p]);
  if (given.length === 0) return null;
  const first = blocks[given[0]];
  const odd = own.find((p) => !blocks[p] || blocks[p].dtype !== first.dtype);
  if (odd) {
    const other = blocks[odd] ? `${blocks[odd].dtype} blocks` : 'a float tensor';
    throw new StateDictError(`stateDict: '${first.name}' is ${first.dtype} blocks and the ${odd} of the same module entry ${name} ${other}; `
      + 'the parts of one entry load as one kind (dequantise them, or give them alike)', { argument: first.name, expected: first.dtype, actual: other });
  }
  return { name, ...stackQuantised(own.map((p) => blocks[p])) };
}

// The error for a part no key gave: the key that holds it (a single-part key first), its shape,
// and for a bias the option of a module without it.
function missingPart(part, parts, keys, prefix, layout) {
  const fits = keys.filter((k) => k.parts.includes(part) && k.parts.every((p) => p in parts));
  const key = fits.find((k) => k.parts.length === 1) ?? fits[0];
  const optional = part.endsWith('.bias') || part === 'sinks' || part.endsWith('_norm');
  const fix = optional ? `; a checkpoint without it: ${optionFor(parts, part, false)}` : '';
  if (!keys.some((k) => k.parts.includes(part))) {
    return new StateDictError(`stateDict: layout '${layout}' has no ${part}${fix}`, { argument: part, expected: part, actual: 'missing' });
  }
  if (!key) {
    const packed = keys.find((k) => k.parts.includes(part)).name;
    return new StateDictError(`stateDict: layout '${layout}' keeps ${part} in '${prefix}${packed}' with others this module lacks${fix}`,
      { argument: prefix + packed, expected: part, actual: 'missing' });
  }
  const { shape } = keyShape(key, parts);
  return new StateDictError(`stateDict: missing key '${prefix}${key.name}' (expected shape ${formatShape(shape ?? [])})${fix}`,
    { argument: prefix + key.name, expected: shape, actual: 'missing' });
}

// Copies one part (its rows row0 .. row0 + part.rows of the key's `rows`) into its module entry.
function copyPart(data, part, row0, rows, conv1d, target) {
  const cols = part.cols || 1;
  if (!conv1d) {
    target.set(data.subarray(row0 * cols, (row0 + part.rows) * cols), part.offset);
    return;
  }
  // Conv1D [in, out]: element (r, c) of the nn.Linear weight [out, in] is data[c · rows + r].
  for (let r = 0; r < part.rows; ++r) {
    for (let c = 0; c < cols; ++c) target[part.offset + r * cols + c] = data[c * rows + row0 + r];
  }
}
