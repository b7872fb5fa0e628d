// The WASM executor (dispatch.js's Executor) of the calling thread, which the pool's workers run
// too: each call copies the checked inputs into one heap block, runs the core, copies the results
// out and frees the block, on every path (heap_calls.js: a failing call leaks nothing).
import { CoreMha, newCoreCache } from './core_binding.js';
import { BackendError, throwCoreError } from '../base/errors.js';
import { weightsPerBatch } from '../base/call_plan.js';
import { maskArgs, outTarget, readFloats, readOutput, withHeap } from './heap_calls.js';

export class WasmExecutor {
  /** Threads of the pthreads module's own pool this module uses (set by createExecutors(); 1 elsewhere). */
  threads = 1;

  /** Every entry is loaded (false before the first load, and after a load that failed part-way). */
  complete = false;

  /**
   * The core's copy of the weights was freed after the load (releaseWeights(): create()'s
   * hostWeights: false, the GPU holds them). complete stays true; what would compute here throws.
   */
  weightsReleased = false;

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
        this.weightsReleased = false;  // nothing loaded now: the core's own refusal names what is missing
      }
      throw e;
    }
  }

  /**
   * Frees the core's copy of the loaded weights (a module whose weights live on the GPU only,
   * dispatch.js): the module still has them, so complete stays true, and every call that would
   * compute here is refused (#requireWeights()) instead of the core's "not loaded".
   */
  releaseWeights() {
    this.handle.forgetParameters();
    this.weightsReleased = true;
  }

  // The BackendError of a call that would compute with the weights here after releaseWeights().
  #requireWeights(method) {
    if (!this.weightsReleased) return;
    throw new BackendError(`${method}: this module keeps its weights on the GPU only (create()'s hostWeights: false), `
      + 'and this call would compute on WASM', { argument: 'hostWeights', expected: 'a call the GPU takes', actual: 'a call on WASM' });
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
    this.#requireWeights('stateDict');
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

  /** docs/attention-math/heads.md §5 for one head: { matrix, shape, rank, factoredParameters, fullParameters }. */
  headBilinearForm(head) {
    this.#requireWeights('headBilinearForm');
    const form = this.handle.headBilinearForm(head);
    if (form.error) throwCoreError(form.error);
    return form;
  }

  /**
   * A KV cache's storage in this module's core: { handle } for kv_cache.js's KvCache, or a typed
   * error (MemoryError when it cannot be allocated; nothing is left allocated then).
   */
  createCache({ batchSize, maxLength, window, dtype }) {
    this.#requireWeights('createCache');  // its calls would compute here
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
    this.#requireWeights('encode');
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
    this.#requireWeights('forward');
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
    this.#requireWeights('forward');
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
