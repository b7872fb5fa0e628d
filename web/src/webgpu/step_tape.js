// A GpuStep's call (dispatch/gpu_step.js) as its encoding left it, played again by its replays
// without encoding it anew: the uniform slots' bytes, the copies before the pass, the pass's
// pipelines, bind groups and grids, the copies after it. Why: a replay of a decode layer spent
// most of its host time forming the same dispatches again (forward_encode.js), where a tape is
// Dawn's calls alone (bench/gpu/gpu_decode_stack.mjs's "replayed" rows).
//
// What a step's token changes in a call is its cache's length n before it. A step's cached call
// is encoded over keysBound() keys, so that its grids and buffers are those of every token up to
// that bound; what is left of n are the uniform words named in positionFields(), written into the
// slots' bytes at each play. Its rotary table spans every position of those replays (one written
// at the encoding: the kernels' row0 moves), except a table of a row per (batch, query), formed
// again at each play. A tape is played
// only where it is what an encoding would give: the same bound and decode grid (boundOf(),
// chunksOf()), the module's pooled buffers, parameters and the cache's storage the ones it binds,
// its spanning table not written over since (SPAN_TABLE, a pooled buffer of its own, which another
// step's call of the module, or its second call in this step, writes its own span into: tableHolds());
// else the call is encoded anew and its tape taken again. A call whose encoding wrote anything else, made result
// buffers or named n in another word has no tape (captureTape()): it is encoded at every replay.
import { fieldsOfBlock } from './kernel_params.js';
import { inScopes } from '../base/error_scopes.js';
import { UNIFORM_SLOT } from './encoding_context.js';
import { decodeChunks } from './forward_encode.js';
import { keysBound } from './step_bound.js';
import { SPAN_TABLE, TABLE, callRotaryTable, rotarySpanFirst, spanTableIn } from './input_steps.js';

// The uniform fields that hold a cached call's length before it (its first new position) n, as
// field → n's offset there: cache_append.wgsl.js's `first`, the attention kernels' and the NaN
// rule's `shift`, and where the call's rotary table spans its replays' positions (input_steps.js's
// rotarySpanFirst()) the rotary kernels' `row0`, n less the table's first position.
const positionFields = (spanFirst) => new Map([['first', 0], ['shift', 0], ...(spanFirst === null ? [] : [['row0', -spanFirst]])]);
// What a step's encoding writes with writeBuffer(): the rotary table, formed again at a play
// unless it spans the replays' positions.
const TABLE_ROLES = new Set([TABLE, SPAN_TABLE]);

// What a tape holds to: the bound of the keys and the decode grid's chunks, which change with n.
const boundOf = (call) => keysBound(call.plan);
const chunksOf = (call) => (call.path === 'decode' ? decodeChunks(call) : 0);

/**
 * The tape of `call` (recordForward()'s, just encoded through `ctx` and `pass`, encodePass()'s
 * { uniforms, packed, commands }), or null where it could not be played again.
 */
export function captureTape(gpu, call, ctx, pass) {
  const { taken, copiesIn, written } = ctx.tape;
  if (ctx.made.size > 0 || [...written.keys()].some((role) => !TABLE_ROLES.has(role))) return null;
  const n = call.plan.cache?.lengthBefore ?? null;
  const spanFirst = call.config.rotary ? rotarySpanFirst(call.plan) : null;
  const patches = positionWords(ctx.slots, n, positionFields(spanFirst));
  if (!patches || !pass.region) return null;
  return {
    bound: boundOf(call),
    chunks: chunksOf(call),
    params: gpu.params,
    storage: call.cache?.keys ?? null,
    taken,
    words: new Uint32Array(pass.packed.buffer, pass.packed.byteOffset, pass.packed.byteLength / 4),
    patches,
    pass,
    spanFirst,
    rotary: spanFirst === null ? written.get(TABLE) ?? null : null,
    // The table spanning the replays, and its write: played only while no other call wrote over it.
    span: spanFirst === null ? null : spannedTable(written.get(SPAN_TABLE) ?? null),
    copiesIn,
    copiesOut: ctx.copiesOut,
    // What recordForward() reads of a ctx, for a played call: no buffer made, the output placed.
    results: { device: gpu.device, made: new Map(), placed: ctx.placed },
  };
}

// A spanning table's { buffer, table (the values written) }, or null where the call wrote none.
const spannedTable = (buffer) => (buffer ? { buffer, table: spanTableIn(buffer) } : null);

// Whether a spanning table's buffer holds its values still: none written since, or the same bits
// (the module's calls on a twin cache at the same length write the same table).
function tableHolds({ buffer, table }) {
  const now = spanTableIn(buffer);
  if (now === table) return true;
  if (!now || now.byteLength !== table.byteLength) return false;
  const [a, b] = [now, table].map((t) => new Uint32Array(t.buffer, t.byteOffset, t.byteLength / 4));
  return a.every((word, i) => word === b[i]);
}

// The words of the packed slots that hold n (a cached call's length before it) plus their field's
// offset ([word, offset]), or null where a field named so holds something else; none without a cache.
function positionWords(slots, n, fields) {
  const words = [];
  for (const [slot, block] of slots.entries()) {
    for (const [index, [name]] of (fieldsOfBlock.get(block) ?? []).entries()) {
      if (!fields.has(name) || n === null) continue;
      const offset = fields.get(name);
      if (new Uint32Array(block)[index] !== n + offset) return null;
      words.push([(slot * UNIFORM_SLOT) / 4 + index, offset]);
    }
  }
  return words;
}

/**
 * Plays `tape` for `call` (a replay's, its plan at the cache's length now) into `recorder` (the
 * step's OpenPass: its dispatches in the open pass). Returns the error scopes of what WebGPU
 * validates at once (inScopes()'s promises: its rotary table's write where it writes one, else
 * none: its uniforms go with the step's submit, and its commands are the encoder's, validated at
 * the submit's finish() in that submit's scopes), or null, having recorded nothing, where the
 * tape is not what encoding the call would give.
 */
export function playTape(gpu, tape, call, recorder) {
  const { device } = gpu;
  if (boundOf(call) !== tape.bound || chunksOf(call) !== tape.chunks) return null;
  if (gpu.params !== tape.params || (call.cache?.keys ?? null) !== tape.storage) return null;
  if (tape.taken.some(([role, floats, usage, buffer]) => gpu.pooled(role, floats, usage) !== buffer)) return null;
  if (call.config.rotary && rotarySpanFirst(call.plan) !== tape.spanFirst) return null;
  // Another step's call of the module, or its second call in this step, wrote its own span over
  // the table since: encoded anew, which writes this call's again.
  if (tape.span && !tableHolds(tape.span)) return null;
  const n = call.plan.cache?.lengthBefore;
  for (const [word, offset] of tape.patches) tape.words[word] = n + offset;
  tape.pass.region.touch();  // the step's submit writes it
  const scopes = tape.rotary ? inScopes(device, () => {
    device.queue.writeBuffer(tape.rotary, 0, callRotaryTable(call.plan, call.config).table);
  }) : [];
  for (const [from, fromOffset, to, toOffset, bytes] of tape.copiesIn) recorder.encoder().copyBufferToBuffer(from, fromOffset, to, toOffset, bytes);
  const pass = recorder.pass();
  for (const { pipeline, group, groups } of tape.pass.commands) {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(...groups);
  }
  for (const [from, to, bytes, at] of tape.copiesOut) recorder.encoder().copyBufferToBuffer(from, 0, to, at, bytes);
  return scopes;
}
