// Reusable host copies of a call's large inputs. A call that reads its inputs after forward()
// returns (a GPU call uploads them once its pipelines are ready; a call may wait for a load or
// for the GPU) owns copies of them (call_plan.js ownedPlan()): the caller may change its arrays
// meanwhile. A fresh copy of a large input pays for new pages as well as the copy: slice() of
// 6 MB took 1.24 ms in Node where set() into an array used before took 0.44 ms
// (docs/webgpu/kernels.md#host-copies). So a module keeps the arrays of its last calls' copies and
// lends them out again; each call leases them and gives them back when it settles, after which
// nothing of the call reads them.

/** Inputs smaller than this are sliced: a fresh small array costs little, and is not kept. */
export const POOLED_BYTES = 1 << 20;
/** Arrays kept between calls (the most recently given back): a call has at most three inputs. */
const KEPT = 3;
/**
 * Calls after which a kept array no call took is dropped: a module whose calls change size keeps
 * no array of an old size for long (its GPU buffers of that size stay until dispose()).
 */
export const IDLE_CALLS = 4;

export class HostCopies {
  #free = [];  // { array, calls (since it was given back) } no call holds, the most recently given back last

  /**
   * A lease for one call: copy(data) gives a copy of `data` (a typed array) that stays the
   * call's until release(), called once when the call has settled.
   */
  lease() {
    for (const entry of this.#free) entry.calls += 1;
    this.#free = this.#free.filter((entry) => entry.calls <= IDLE_CALLS);
    const held = [];
    return {
      copy: (data) => {
        if (data.byteLength < POOLED_BYTES) return data.slice();
        const array = this.#take(data.constructor, data.length);
        held.push(array);
        const view = array.length === data.length ? array : array.subarray(0, data.length);
        view.set(data);
        return view;
      },
      release: () => {
        this.#free.push(...held.splice(0).map((array) => ({ array, calls: 0 })));
        this.#free.splice(0, Math.max(0, this.#free.length - KEPT));
      },
    };
  }

  /** Drops the kept arrays (the module's dispose()). */
  clear() {
    this.#free = [];
  }

  // The smallest free array of `type` with room for `length` elements and no more than twice
  // that (a much larger one would stay held by a small call), else a new one.
  #take(type, length) {
    let best = -1;
    this.#free.forEach(({ array: a }, i) => {
      const fits = a.constructor === type && a.length >= length && a.length <= 2 * length;
      if (fits && (best < 0 || a.length < this.#free[best].array.length)) best = i;
    });
    return best < 0 ? new type(length) : this.#free.splice(best, 1)[0].array;
  }
}
