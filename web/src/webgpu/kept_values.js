// Values the package's calls make again and again (bind groups, the variants that fit a problem),
// kept per owner (a device, a module, a cache) up to a bound: the least recently used goes first,
// so that keys which change call after call (a decode step's growing key count) never hold more
// than `capacity`, and an owner that is collected takes its values with it (a WeakMap).

/**
 * A store of at most `capacity` values per owner: get(owner, key, make) gives the value kept for
 * `key` (a string) under `owner` (an object), else make()'s, kept from then on.
 */
export function keptPer(capacity) {
  const stores = new WeakMap();  // owner → Map(key → value), the least recently used first
  return {
    get(owner, key, make) {
      let store = stores.get(owner);
      if (!store) stores.set(owner, (store = new Map()));
      let value = store.get(key);
      if (value !== undefined) {
        store.delete(key);  // moved to the most recently used end
      } else {
        value = make();
        if (store.size >= capacity) store.delete(store.keys().next().value);
      }
      store.set(key, value);
      return value;
    },
  };
}
