// Workgroup flags that a kernel ORs or maxes into start at zero by the kernel's own store, not by
// WGSL's zeroing of workgroup memory: the Node tests run Dawn with that zeroing switched off
// (tests/webgpu/node_setup.mjs: it was most of SwiftShader's compile time), where a kernel that
// relied on it would read what the last workgroup left, and pass or fail by chance.

/**
 * WGSL statements: invocation 0 (the caller's local_invocation_index, which it names `t`) stores
 * zero to the workgroup atomic `name` (or, given `count`, invocations 0 … count − 1 to the count
 * atomics of array `name`, count at most the workgroup's size), then a barrier. In uniform
 * control flow, before the first atomic operation.
 */
export function zeroWorkgroupAtomic(name, count = null) {
  const store = count === null ? `if (t == 0u) { atomicStore(&${name}, 0u); }`
    : `if (t < ${count}u) { atomicStore(&${name}[t], 0u); }`;
  return `${store}\n  workgroupBarrier();`;
}
