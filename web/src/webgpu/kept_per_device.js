// Values a device's calls make again and again (bind groups, the variants that fit a problem),
// kept per device up to a bound: the least recently used goes first, so that keys which change
// call after call (a decode step's growing key count) never hold more than `capacity`.

/**
 * A store of at most `capacity` values per device: get(device, key, make) gives the value kept for
 * `key` (a string) on `device`, else make()'s, kept from then on.
 */
export function keptPerDevice(capacity) {
  const stores = new WeakMap();  // device → Map(key → value), the least recently used first
  return {
    get(device, key, make) {
      let store = stores.get(device);
      if (!store) stores.set(device, (store = new Map()));
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
