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
import { zeroWorkgroupAtomic } from './workgroup_zero.wgsl.js';

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
  ${zeroWorkgroupAtomic('subgroupNames', words)}
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

/** Floats of workgroup memory rowGroupMax() uses for `groups` groups of 16 (its slots and flags). */
export const rowGroupMaxFloats = (groups) => 16 * groups + 2;

/**
 * WGSL: the max over each group of 16 consecutive local indices (group t / 16) of a vec4f, for
 * `groups` such groups: fn rowGroupsOf(t, lane, size) -> RowGroups (call once, first, in uniform
 * control flow: two barriers; lane and size the subgroup_invocation_id and subgroup_size
 * builtins) and fn rowGroupMax(v, t, g) -> vec4f (every invocation of the workgroup in uniform
 * control flow; one barrier; the slots are reused, so two calls need a barrier between them).
 * Shuffles within a subgroup need to know which lanes share a group: where every subgroup is an
 * aligned run of local indices (lane = t mod size: what GPUs do with a 1-D workgroup, and
 * SwiftShader), lanes t ^ o for o < min(size, 16) are in t's group, so a butterfly of
 * subgroupShuffleXor reduces a run of min(size, 16), and runs of a group (16 / size of them where
 * size < 16) meet in workgroup slots. Elsewhere g.aligned is false (uniform: read back through
 * workgroupUniformLoad) and the caller takes its own path. A max is exact in any order: the
 * result is the plain loop's.
 */
export const rowGroupMaxWgsl = (groups) => rowGroupsWgsl({ groups, width: 16, op: 'max' });

/**
 * rowGroupMaxWgsl()'s WGSL for groups of `width` (a power of two, at most 128) consecutive local
 * indices and `op` 'max' (fn rowGroupMax) or 'add' (fn rowGroupAdd: the sum, butterfly first, then
 * the runs' slots in order: one order per subgroup size, the same on every run).
 */
export function rowGroupsWgsl({ groups, width, op }) {
  const combine = COMBINE[op].pair;
  const fn = `rowGroup${op[0].toUpperCase()}${op.slice(1)}`;
  return /* wgsl */ `
struct RowGroups {
  aligned: bool,  // every subgroup of the workgroup is an aligned run of local indices
  run: u32,       // lanes of a group in one subgroup: min(subgroup size, ${width})
}

var<workgroup> rowGroupMisaligned: atomic<u32>;
var<workgroup> rowGroupFlag: u32;
var<workgroup> rowGroupSlots: array<vec4f, ${groups * (width / 4)}>;  // [group][run]: up to ${width} / 4 runs

fn rowGroupsOf(t: u32, lane: u32, size: u32) -> RowGroups {
  ${zeroWorkgroupAtomic('rowGroupMisaligned')}
  if (lane != t % size) { atomicOr(&rowGroupMisaligned, 1u); }
  workgroupBarrier();
  if (t == 0u) { rowGroupFlag = atomicLoad(&rowGroupMisaligned); }
  let misaligned = workgroupUniformLoad(&rowGroupFlag);
  return RowGroups(misaligned == 0u, min(size, ${width}u));
}

fn ${fn}(v: vec4f, t: u32, g: RowGroups) -> vec4f {
  var r = v;
  for (var o = 1u; o < g.run; o *= 2u) { r = ${combine('r', 'subgroupShuffleXor(r, o)')}; }
  let at = (t / ${width}u) * ${width / 4}u;
  if ((t % ${width}u) % g.run == 0u) { rowGroupSlots[at + (t % ${width}u) / g.run] = r; }
  workgroupBarrier();
  var m = rowGroupSlots[at];
  for (var k = 1u; k < ${width}u / g.run; k++) { m = ${combine('m', 'rowGroupSlots[at + k]')}; }
  return m;
}
`;
}
