// Values the package's calls make again and again (bind groups, the variants that fit a problem, a
// call's kernels and linear problems),
// kept per owner (a device, a module, a cache) up to a bound: the least recently used goes first,
// so that keys which change call after call (a decode step's growing key count) never hold more
// than `capacity`, and an owner that is collected takes its values with it (a WeakMap).

/**
 * A store of at most `capacity` values per owner: get(owner, key, make) gives the value kept for
 * `key` (a string) under `owner` (an object), else make()'s, kept from then on; find(owner, key)
 * the value kept, or undefined; keep(owner, key, value) keeps one (a value made after an await).
 */
export function keptPer(capacity) {
  const stores = new WeakMap();  // owner → Map(key → value), the least recently used first
  const find = (owner, key) => {
    const store = stores.get(owner);
    const value = store?.get(key);
    if (value !== undefined) {
      store.delete(key);  // moved to the most recently used end
      store.set(key, value);
    }
    return value;
  };
  const keep = (owner, key, value) => {
    let store = stores.get(owner);
    if (!store) stores.set(owner, (store = new Map()));
    store.delete(key);
    if (store.size >= capacity) store.delete(store.keys().next().value);
    store.set(key, value);
    return value;
  };
  return {
    find,
    keep,
    get(owner, key, make) {
      const value = find(owner, key);
      return value !== undefined ? value : keep(owner, key, make());
    },
  };
}

const ids = new WeakMap();  // object → its number
let nextId = 1;

/** A number for `object`, the same for as long as it lives (a part of a key that names it). */
export function idOf(object) {
  let id = ids.get(object);
  if (id === undefined) ids.set(object, (id = nextId++));
  return id;
}
