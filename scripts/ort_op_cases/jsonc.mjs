// onnxruntime's operator test files (js/web/test/data/ops/*.jsonc): JSON with // and /* */
// comments, a list of groups { name, operator, opset, attributes: [{ name, data, type }], cases:
// [{ name, inputs, outputs }] } whose tensors are { data, dims, type } (an omitted optional input:
// data null). Read here into plain objects; tensors' values as float64, float16 ones rounded to
// float16 first (what onnxruntime-web's test runner hands the kernel).
import { readFileSync } from 'node:fs';
import { roundToHalf, widenHalf } from '../../web/src/storage/half_floats.js';

/** The text without comments; a // or /* inside a string stays. */
export function stripComments(text) {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      i = text.indexOf('*/', i + 2) + 1;
      if (i === 0) throw new Error('a /* comment that never closes');
    } else {
      out += c;
    }
  }
  return out;
}

/** A file's groups, each with its attributes as an object (name → data). */
export function readOpFile(path) {
  return JSON.parse(stripComments(readFileSync(path, 'utf8'))).map((g) => ({
    ...g, attrs: Object.fromEntries((g.attributes ?? []).map((a) => [a.name, a.data])),
  }));
}

/** An ORT tensor as { values: Float64Array, dims, type }, or null for an omitted input. */
export function tensorOf(t) {
  if (!t || t.data === null || t.data === undefined) return null;
  const values = t.type === 'float16'
    ? Float64Array.from(widenHalf('float16', roundToHalf('float16', Float32Array.from(t.data))))
    : Float64Array.from(t.data);
  return { values, dims: t.dims ?? [values.length], type: t.type };
}
