// The WASM executor (dispatch.js's Executor) of the calling thread, which the pool's workers run
// too, and scaledDotProductAttention() on the core: each copies the checked inputs into one heap
// block per call, runs the core, copies the results out and frees the block, on every path (so a
// failing call leaks nothing).
import { CoreMha, WASM_MAX_BYTES, coreSdpa, newCoreCache } from './core_binding.js';
import { throwCoreError, MemoryError } from '../base/errors.js';
import { weightsPerBatch } from '../base/call_plan.js';
import { requireOutWhole, writeOut } from '../base/output_target.js';

const F32 = 4;

/** Test seam: malloc(core, bytes) in place of core._malloc (a 0 from it is an out-of-memory). */
export const heapHooks = { malloc: null };

// "64 + 4294967296": the byte sizes a call's block is made of, for the error message.
const describeParts = (sizes) => sizes.filter((b) => b > 0).join(' + ');

/**
 * Reserves one aligned block for `parts` ({ data } to copy in, or { floats } to reserve), calls
 * `body(addresses)` and always frees the block. Views are taken after malloc, since heap growth
 * detaches earlier ones.
 */
function withHeap(core, parts, body) {
  // The same typed array passed twice (self-attention: query === key === value) is copied once,
  // and the core sees equal addresses, which lets it fuse the Q, K and V projections.
  const first = parts.map((p, i) => (p.data ? parts.findIndex((o) => o.data === p.data) : i));
  const sizes = parts.map((p, i) => {
    if (first[i] !== i) return 0;
    const bytes = p.data ? p.data.byteLength : (p.floats ?? 0) * F32;
    return Math.ceil(bytes / 16) * 16;
  });
  const total = sizes.reduce((a, b) => a + b, 0);
  // _malloc takes a 32-bit size: a request at or past 4 GiB would wrap to a small block that the
  // copies below would then overrun.
  if (total >= WASM_MAX_BYTES) {
    throw new MemoryError(`out of WASM memory: a call needs ${total} bytes (${describeParts(sizes)}), `
      + `more than a WASM heap holds (${WASM_MAX_BYTES})`, { argument: 'inputs', expected: `< ${WASM_MAX_BYTES} bytes`, actual: total });
  }
  const bytes = Math.max(total, 16);
  // >>> 0: _malloc returns an i32, negative for an address at or past 2 GiB (the heap may grow to 4).
  const base = (heapHooks.malloc ? heapHooks.malloc(core, bytes) : core._malloc(bytes)) >>> 0;
  if (!base) throw new MemoryError(`out of WASM memory: a call needs ${total} bytes`);
  try {
    const addresses = [];
    let offset = base;
    parts.forEach((p, i) => {
      if (first[i] !== i) {
        addresses.push(addresses[first[i]]);
        return;
      }
      addresses.push(p.data || p.floats ? offset : 0);
      if (p.data) core.HEAPU8.set(new Uint8Array(p.data.buffer, p.data.byteOffset, p.data.byteLength), offset);
      offset += sizes[i];
    });
    return body(addresses);
  } finally {
    core._free(base);
  }
}

// slice() straight off HEAPF32: no intermediate view to allocate on every call.
const readFloats = (core, address, count) => core.HEAPF32.slice(address >>> 2, (address >>> 2) + count);

// A float32 call's output: into the caller's `out` (base/output_target.js) when it gave one, else
// a new array. (A 16-bit call's `out` is written by api.js, after the rounding.)
const readOutput = (core, address, count, target) => (target
  ? writeOut(target, core.HEAPF32.subarray(address >>> 2, (address >>> 2) + count))
  : readFloats(core, address, count));

// The `out` a float32 call writes on this thread, null for none or for a 16-bit call; checked
// before the core runs, so that an `out` detached while the call waited fails with the call
// undone (a cache not appended to).
function outTarget(plan) {
  if (!plan.out || plan.dtype !== 'float32') return null;
  requireOutWhole(plan.out);
  return plan.out;
}

// A plan's mask as core_binding.js takes it: its kind, where its data was copied, its rank and its
// shape padded to three dims.
function maskArgs(mask, address) {
  const [d0 = 0, d1 = 0, d2 = 0] = mask.shape;
  return { kind: mask.kind, address, rank: mask.shape.length, shape0: d0, shape1: d1, shape2: d2 };
}

export class WasmExecutor {
  /** Threads of the pthreads module's own pool this module uses (set by createExecutors(); 1 elsewhere). */
  threads = 1;

  /** Every entry is loaded (false before the first load, and after a load that failed part-way). */
  complete = false;

  /**
   * core: an instantiated WASM module (instantiate_core.js); config: the module's, resolved;
   * coreConfig: the same as the core's MhaConfig takes it (checks/module_config.js coreConfig(),
   * given by whoever makes the executor: the pool's workers get it with the config).
   */
  constructor(core, config, coreConfig) {
    this.core = core;
    this.config = config;
    this.coreConfig = coreConfig;
    this.handle = new CoreMha(core);
    const error = this.handle.configure(coreConfig) || this.#setRotaryTable(config.rotary?.table);
    if (error) {
      this.handle.delete();
      throwCoreError(error);
    }
  }

  // rotary: { table }: the cos and sin rows into the core ('' when there is none, else its error).
  #setRotaryTable(table) {
    if (!table) return '';
    return withHeap(this.core, [{ data: table.cos }, { data: table.sin }], ([cos, sin]) =>
      this.handle.setRotaryTable(cos, sin, table.positions));
  }

  // The core's list, asked for once (it is fixed by the config): a cold start reads it twice, and
  // each ask builds its JSON in WASM memory.
  #specs = null;

  parameterSpecs() {
    this.#specs ??= this.handle.parameterSpecs();
    return JSON.parse(this.#specs);
  }

  /**
   * entries: [{ name, data, dtype }] already checked against parameterSpecs(): float32 data, or
   * 16-bit bits (a Uint16Array) of dtype 'float16' | 'bfloat16', which the core stores as the
   * module's weightsDtype says (kept, widened, rounded or quantised; no float32 copy of them here);
   * or quantised entries ({ dtype: 'int8' | 'int4', data: codes, scales, zeroPoints? }), packed as they are.
   */
  loadStateDict(entries) {
    let loaded = 0;
    try {
      for (const { name, data, dtype = 'float32', scales, zeroPoints } of entries) {
        // A quantised entry (storage/quantised_tensors.js): its codes, scales and zero points as they are.
        const error = scales ? withHeap(this.core, [{ data }, { data: scales }, { data: zeroPoints }], ([codes, s, z]) =>
          this.handle.loadQuantised(name, codes, s, z, data.length, dtype))
          : this.#loadInPlace(name, data, dtype) ?? withHeap(this.core, [{ data }], ([address]) =>
            this.handle.loadParameter(name, address, data.length, dtype));
        if (error) throwCoreError(error);
        loaded += 1;
      }
      this.complete = true;
    } catch (e) {
      // Every refusal comes before the first entry (state_dict.js checks them all), so past it
      // only memory fails (an entry's copy, the core's storage): the entries already in would
      // leave a mix of two state dicts, so the core forgets them all and refuses to compute, as
      // before a first load, until a load succeeds.
      if (loaded > 0) {
        this.handle.forgetParameters();
        this.complete = false;
      }
      throw e;
    }
  }

  /**
   * Entry `name` written straight into the core's new storage where the core takes it that way
   * (f32 weights into an f32 module): the load then holds one copy of the weights in WASM memory,
   * not a staging copy beside the packed one (a cold start's loadStateDict touches half the fresh
   * pages). Returns the core's error text ('' on success), or null: load it the other way.
   */
  #loadInPlace(name, data, dtype) {
    const begun = this.handle.beginLoadInPlace(name, data.length, dtype);
    if (begun.error) return begun.error;
    if (begun.parts.length === 0) return null;
    // HEAPF32 read after the call: the storage may have grown the memory (a new buffer).
    for (const { address, offset, count } of begun.parts) this.core.HEAPF32.set(data.subarray(offset, offset + count), address / 4);
    return this.handle.finishLoadInPlace();
  }

  /**
   * Every entry as loaded, widened to float32: [{ name, data, dtype: 'float32' }] in
   * parameterSpecs() order (for float32 weights, exactly the values loadStateDict() took).
   */
  readStateDict() {
    return this.parameterSpecs().map(({ name, shape }) => {
      const count = shape.reduce((a, b) => a * b, 1);
      const data = withHeap(this.core, [{ floats: count }], ([at]) => {
        const error = this.handle.readParameter(name, at, count);
        if (error) throwCoreError(error);
        return readFloats(this.core, at, count);
      });
      return { name, data, dtype: 'float32' };
    });
  }

  /** docs/attention-math.md §5 for one head: { matrix, shape, rank, factoredParameters, fullParameters }. */
  headBilinearForm(head) {
    const form = this.handle.headBilinearForm(head);
    if (form.error) throwCoreError(form.error);
    return form;
  }

  /**
   * A KV cache's storage in this module's core: { handle } for kv_cache.js's KvCache, or a typed
   * error (MemoryError when it cannot be allocated; nothing is left allocated then).
   */
  createCache({ batchSize, maxLength, window, dtype }) {
    const handle = newCoreCache(this.core);
    const error = this.handle.createCache(handle, batchSize, maxLength, window, dtype);
    if (error) {
      handle.delete();
      throwCoreError(error);
    }
    return handle;
  }

  /** encode(): a new cache of this core holding the plan's projected key and value (read-only). */
  encode({ B, S, key, value, dtype }) {
    const handle = newCoreCache(this.core);
    try {
      withHeap(this.core, [{ data: key }, { data: value }], ([k, v]) => {
        const error = this.handle.encode(handle, k, v, B, S, dtype);
        if (error) throwCoreError(error);
      });
      return handle;
    } catch (e) {
      handle.delete();
      throw e;
    }
  }

  /**
   * cache.truncate(): drops positions >= length of a cache of this core, or per row >= lengths[b]
   * (an array: one per row); kv_cache.js has checked them.
   */
  truncateCache(handle, length) {
    const error = typeof length === 'number' ? handle.truncate(length)
      : withHeap(this.core, [{ data: Float64Array.from(length) }], ([at]) => handle.truncateRows(at));
    if (error) throwCoreError(error);
  }

  /** cache.keep(): keeps `indices` (an Int32Array kv_cache.js has checked) of the last call's positions. */
  keepCache(handle, indices) {
    withHeap(this.core, [{ data: indices }], ([at]) => {
      const error = this.handle.keepCached(handle, at, indices.length);
      if (error) throwCoreError(error);
    });
  }

  /** cache.fork(): a new cache of this core holding a copy of `handle`'s storage. */
  forkCache(handle) {
    const fork = this.forkStorage();
    try {
      return this.copyCache(handle, fork);
    } catch (e) {
      fork.delete();
      throw e;
    }
  }

  /** A fork's storage: an empty handle of this core, which copyCache() fills. */
  forkStorage() {
    return newCoreCache(this.core);
  }

  /** `to` (a cache handle of this core) becomes a copy of `from` (MemoryError: unchanged); returns it. */
  copyCache(from, to) {
    const error = from.fork(to);
    if (error) throwCoreError(error);
    return to;
  }

  /**
   * cache.read(): positions [first, first + count) of a cache of this core, as { key [B, h_kv,
   * count, d_k], value [B, h_kv, count, d_v] } in position order.
   */
  readCache(handle, first, count, batchSize) {
    const { numKvHeads: G, headDim: dk, valueHeadDim: dv } = this.config;
    const [kFloats, vFloats] = [batchSize * G * count * dk, batchSize * G * count * dv];
    return withHeap(this.core, [{ floats: kFloats }, { floats: vFloats }], ([k, v]) => {
      const error = handle.read(first, count, k, v);
      if (error) throwCoreError(error);
      return {
        key: { data: readFloats(this.core, k, kFloats), shape: [batchSize, G, count, dk] },
        value: { data: readFloats(this.core, v, vFloats), shape: [batchSize, G, count, dv] },
      };
    });
  }

  /** plan: from resolveMhaForward(). Returns { output: Float32Array, weights: Float32Array | null }. */
  forward(plan) {
    const cache = plan.cache?.storage;
    return this.#run(plan, plan.B * plan.L * this.config.embedDim, this.config.numHeads,
      cache ? (args) => this.handle.forwardCached(args, cache) : (args) => this.handle.forward(args), outTarget(plan));
  }

  /**
   * Heads [headBegin, headEnd) of the plan only (a worker's share). Returns { heads: Float32Array
   * [B·L, (headEnd − headBegin)·valueHeadDim], weights: null | [B, L, S] (this range's share of
   * the average: the shares add up) | [B, headEnd − headBegin, L, S] }.
   */
  forwardHeads(plan, headBegin, headEnd) {
    const n = headEnd - headBegin;
    const { output, weights } = this.#run(plan, plan.B * plan.L * n * this.config.valueHeadDim, n,
      (args) => this.handle.forwardHeads(args, headBegin, headEnd));
    return { heads: output, weights };
  }

  /**
   * One task of the worker pool ({ h0, h1 } heads of the plan): a task with every head is a
   * whole forward (output rows), else forwardHeads (that head range, projected later).
   */
  runTask(plan, task) {
    if (task.h0 === 0 && task.h1 === this.config.numHeads) return this.forward(plan);
    return this.forwardHeads(plan, task.h0, task.h1);
  }

  /** heads [rows, numHeads·valueHeadDim] → output [rows, embedDim] (W_O and its bias). */
  projectOutput(heads, rows) {
    const outFloats = rows * this.config.embedDim;
    return withHeap(this.core, [{ data: heads }, { floats: outFloats }], ([at, out]) => {
      const error = this.handle.projectOutput(at, rows, out);
      if (error) throwCoreError(error);
      return readFloats(this.core, out, outFloats);
    });
  }

  // Copies the plan's inputs in, calls `call(args)` with the core's ForwardArgs (`output`: where
  // `outFloats` floats go) and reads the output (into `target` when given) and the weights (of
  // `weightHeads` heads unless averaged) back.
  #run(plan, outFloats, weightHeads, call, target = null) {
    // The pthreads module's pool serves every module: each call sets this module's thread count.
    this.core.setThreadLimit(this.threads);
    const { B, L, S } = plan;
    const weightFloats = B * weightsPerBatch(plan, weightHeads);
    const kpm = plan.keyPaddingMask;
    const am = plan.attnMask;
    return withHeap(this.core, [
      { data: plan.query }, { data: plan.key }, { data: plan.value },
      { data: kpm.data }, { data: am.data }, { data: plan.positionIds }, { data: plan.cache?.rows },
      { floats: outFloats }, { floats: weightFloats },
    ], ([query, key, value, kpmAt, amAt, positionIds, rows, output, weights]) => {
      const error = call({
        batch: B, L, S, query, key, value,
        keyPaddingMask: maskArgs(kpm, kpmAt), attnMask: maskArgs(am, amAt),
        isCausal: plan.isCausal, output, weights, averageWeights: plan.averageAttnWeights, positionIds, rows,
      });
      if (error) throwCoreError(error);
      return {
        output: readOutput(this.core, output, outFloats, target),
        weights: weightFloats ? readFloats(this.core, weights, weightFloats) : null,
      };
    });
  }

  dispose() {
    this.handle.delete();
    this.handle = null;
  }
}

/** plan: from resolveSdpa(). Returns { output, weights }. */
export function wasmSdpa(core, plan) {
  const { B: N, L, S, dk, dv, attnMask } = plan;
  const outFloats = N * L * dv;
  const weightFloats = plan.needWeights ? N * L * S : 0;
  const target = outTarget(plan);
  return withHeap(core, [
    { data: plan.query }, { data: plan.key }, { data: plan.value }, { data: attnMask.data },
    { floats: outFloats }, { floats: weightFloats },
  ], ([q, k, v, mask, output, weights]) => {
    const error = coreSdpa(core, {
      N, L, S, dk, dv, q, k, v, attnMask: maskArgs(attnMask, mask),
      isCausal: plan.isCausal, hasScale: plan.scale !== undefined, scale: plan.scale ?? 0, output, weights,
    });
    if (error) throwCoreError(error);
    return {
      output: readOutput(core, output, outFloats, target),
      weights: weightFloats ? readFloats(core, weights, weightFloats) : null,
    };
  });
}

/**
 * The WASM executor of an attention-only Dispatcher (api/attention_engines.js): its calls are
 * scaledDotProductAttention() plans, computed by the core's SDPA on the calling thread; no weights.
 */
export class WasmSdpaExecutor {
  complete = true;  // nothing to load
  threads = 1;
  #core;

  constructor(core) {
    this.#core = core;
  }

  forward(plan) {
    return wasmSdpa(this.#core, plan);
  }

  dispose() {}
}
