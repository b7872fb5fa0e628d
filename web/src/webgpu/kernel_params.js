// A kernel's uniform block from one list of fields: the WGSL `struct Params` and the JS packing
// of the values both come from it, so the shader and the host cannot disagree on the order,
// types or count of the uniforms (a new field is one line in the list).
//
// A field is [name, type, comment] with type 'u32' or 'f32' (4 bytes each, no vectors: every
// field lands at 4·index bytes, which is also WGSL's layout for a struct of scalars).

/** The WGSL text `struct Params { … }` plus its binding at @group(0) @binding(0) as `p`. */
export function paramsWgsl(fields) {
  const width = Math.max(...fields.map(([name, type]) => `${name}: ${type},`.length));
  const lines = fields.map(([name, type, comment]) => {
    const decl = `${name}: ${type},`;
    return comment ? `  ${decl.padEnd(width)}  // ${comment}` : `  ${decl}`;
  });
  return `struct Params {\n${lines.join('\n')}\n}\n\n@group(0) @binding(0) var<uniform> p: Params;\n`;
}

/** Bytes of the uniform block of `fields`. */
export const paramsBytes = (fields) => fields.length * 4;

/**
 * The uniform block of `fields` filled from `values` ({ name: number }); a missing value is 0
 * (flags that are off, offsets that are zero), a name the list lacks throws.
 */
export function packParams(fields, values) {
  const block = new ArrayBuffer(paramsBytes(fields));
  if (taggingBlocks) fieldsOfBlock.set(block, fields);
  const u32 = new Uint32Array(block);
  const f32 = new Float32Array(block);
  const index = indexOf(fields);
  for (const name in values) {
    const field = index.get(name);
    if (!field) throw new Error(`uniform '${name}' is not one of ${[...index.keys()].join(', ')}`);
    if (field.type === 'f32') f32[field.i] = values[name];
    else u32[field.i] = values[name];
  }
  return block;
}

/** The fields a block of packParams() was packed from, inside withBlockFields() (step_tape.js finds its words by name). */
export const fieldsOfBlock = new WeakMap();
let taggingBlocks = false;

/**
 * fn() run with every block packParams() makes kept in fieldsOfBlock: a GpuStep's encoding. Other
 * calls pack without it (a WeakMap entry a block cost a pack about half its time again).
 */
export function withBlockFields(fn) {
  taggingBlocks = true;
  try {
    return fn();
  } finally {
    taggingBlocks = false;
  }
}

// name → { i, type } of a list of fields, made once per list (a decode layer packs a dozen blocks).
const indexes = new WeakMap();
function indexOf(fields) {
  let index = indexes.get(fields);
  if (!index) indexes.set(fields, (index = new Map(fields.map(([name, type], i) => [name, { i, type }]))));
  return index;
}
