// console.warn for things a user should hear about once per page or process, not on every call
// (a deprecated option, threads that could not start): one message per key.
const warned = new Set();

export function warnOnce(key, message) {
  if (warned.has(key)) return;
  warned.add(key);
  console.warn(message);
}
