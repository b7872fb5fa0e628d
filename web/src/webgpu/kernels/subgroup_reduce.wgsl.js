// WGSL: a workgroup-wide reduction (max, sum) by subgroup operations, for any subgroup size
// (WebGPU allows 4 to 128: SwiftShader 4, Intel 8–32, NVIDIA 32, AMD 32 or 64, some mobile GPUs
// 128, and a subgroup may be larger than the workgroup).
//
// Why: a tree reduction over workgroup memory costs log2(WG) barriers (6 at 64 invocations); here
// each subgroup reduces in registers (subgroupMax / subgroupAdd), its smallest invocation writes
// the subgroup's value to a slot, one barrier, and every invocation combines the few slots (64 /
// subgroup size: 2 on NVIDIA, 1 on a 64-wide AMD wave) in slot order. WGSL says nothing of how
// invocations map to subgroups (a subgroup need not be a contiguous run of local indices), so the
// slots are assigned once, at subgroupLayout(): each subgroup is named by its smallest local
// index (subgroupMin), those indices are set in a bit mask, and a subgroup's slot is the number
// of names below its own. The slots' order, and so a sum's, depends only on the device's layout:
// the same on every run.
//
// Every function here must be called in uniform control flow (subgroup operations and barriers
// need it), after subgroupLayout(). Each reduction has slots of its own, so two different ones
// need no barrier between them; the same one called twice in a dispatch would need one.

/** The directive a shader using these must start with (the device must have 'subgroups'). */
export const ENABLE_SUBGROUPS = 'enable subgroups;';

/** The WebGPU feature the kernels of this file need. */
export const SUBGROUPS_FEATURE = 'subgroups';

const reduction = (name, { type = 'f32', ...combine }, wg) => /* wgsl */ `
var<workgroup> ${name}Slots: array<${type}, ${wg}>;

fn ${name}(x: ${type}, sg: SubgroupLayout) -> ${type} {
  let s = ${combine.subgroup}(x);
  if (sg.leader) { ${name}Slots[sg.slot] = s; }
  workgroupBarrier();
  var r = ${name}Slots[0];
  for (var k = 1u; k < sg.count; k++) { r = ${combine.pair('r', `${name}Slots[k]`)}; }
  return r;
}`;

const COMBINE = {
  max: { subgroup: 'subgroupMax', pair: (a, b) => `max(${a}, ${b})` },
  add: { subgroup: 'subgroupAdd', pair: (a, b) => `${a} + ${b}` },
  // u32 (e.g. non-negative floats' bits, which order as their values): exact in any order.
  maxU32: { subgroup: 'subgroupMax', pair: (a, b) => `max(${a}, ${b})`, type: 'u32' },
};

/**
 * WGSL for a workgroup of `wg` invocations (at most 1024): struct SubgroupLayout, fn
 * subgroupLayout(t: local_invocation_index) -> SubgroupLayout (call it once, first), and one
 * reduction function per entry of `reductions` ({ name: 'max' | 'add' | 'maxU32' }), fn name(x: f32,
 * sg: SubgroupLayout) -> f32 (u32 for maxU32), which returns to every invocation the max or sum of
 * every invocation's x.
 */
export function subgroupReductions(wg, reductions) {
  const words = Math.ceil(wg / 32);
  return /* wgsl */ `
struct SubgroupLayout {
  slot: u32,     // this subgroup's rank among the workgroup's, by smallest local index
  count: u32,    // subgroups in the workgroup
  leader: bool,  // whether this invocation is its subgroup's smallest local index
}

var<workgroup> subgroupNames: array<atomic<u32>, ${words}>;  // bit t: t is a subgroup's smallest index

fn subgroupLayout(t: u32) -> SubgroupLayout {
  let first = subgroupMin(t);
  if (t == first) { atomicOr(&subgroupNames[t / 32u], 1u << (t % 32u)); }
  workgroupBarrier();
  var slot = 0u;
  var count = 0u;
  for (var w = 0u; w < ${words}u; w++) {
    let bits = atomicLoad(&subgroupNames[w]);
    let below = clamp(first, w * 32u, w * 32u + 32u) - w * 32u;
    slot += countOneBits(extractBits(bits, 0u, below));
    count += countOneBits(bits);
  }
  return SubgroupLayout(slot, count, t == first);
}
${Object.entries(reductions).map(([name, op]) => reduction(name, COMBINE[op], wg)).join('\n')}
`;
}
