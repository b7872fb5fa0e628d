#!/usr/bin/env node
// The walk of one call (issue 36): the files of web/src that a cached forward() runs code in
// before it calls into the WASM core, measured, not read off the imports. A module with float16
// weights and a cache on the WASM backend makes its first call (which warms every lazy path: the
// cache group's registration, the plan's buffers); the second call runs under V8's precise
// coverage with call counts (node:inspector). Every function through which JS enters WebAssembly
// (the instance's exports, and the table's entries that Embind's invokers call) is wrapped, and
// each such call during forward() takes the coverage since the one before. Prints the calls into
// WASM in order, then for the first of them and for the one that runs the kernels (the core's
// forward entry) the files that ran before it, with their functions, and the stack at it.
//
//   node scripts/call_walk.mjs [--weights float16] [--cache float16] [--json]
//
// Needs web/dist (bash scripts/build.sh). Files on the stack come first, outermost first; the
// coverage has no order, so the others follow in path order.
import { Session } from 'node:inspector';
import { fileURLToPath } from 'node:url';
import { relative } from 'node:path';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({
  options: { weights: { type: 'string', default: 'float16' }, cache: { type: 'string', default: 'float16' }, json: { type: 'boolean', default: false } },
});
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SRC = 'web/src/';

const session = new Session();
session.connect();
/** An inspector call, synchronous (a session on this thread answers before post() returns). */
function post(method, params = {}) {
  let answer;
  session.post(method, params, (error, result) => { answer = { error, result }; });
  if (!answer) throw new Error(`${method}: no synchronous answer`);
  if (answer.error) throw answer.error;
  return answer.result;
}

// Every way into WASM, wrapped before the core is instantiated: while `onCall` is set, each call
// in hands it the stack.
let onCall = null;
const wrap = (fn) => (typeof fn !== 'function' ? fn : function intoWasm(...args) {
  if (onCall) onCall(new Error().stack);
  return fn.apply(this, args);
});
const tableGet = WebAssembly.Table.prototype.get;
WebAssembly.Table.prototype.get = function get(index) { return wrap(tableGet.call(this, index)); };
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = async function wrappedInstantiate(...args) {
  const made = await instantiate.apply(this, args);
  const instance = made instanceof WebAssembly.Instance ? made : made.instance;
  const exports = Object.fromEntries(Object.entries(instance.exports).map(([name, value]) => [name, wrap(value)]));
  return made instanceof WebAssembly.Instance ? { exports } : { module: made.module, instance: { exports } };
};

const { MultiHeadAttention } = await import('#webattention');
const E = 64;
const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, weightsDtype: flags.weights, threads: 1, backend: 'wasm' });
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => {
  const data = new Float32Array(shape.reduce((a, b) => a * b, 1)).map((_, i) => Math.sin(i + name.length) * 0.1);
  return [name, { data, shape }];
})));
const cache = mha.createCache({ maxLength: 16, dtype: flags.cache });
const token = () => ({ data: new Float32Array(E).map((_, i) => Math.cos(i)), shape: [1, 1, E] });
await mha.forward(token(), token(), token(), { cache });

post('Profiler.enable');
post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
post('Profiler.takePreciseCoverage');  // counts from here on
// Each call into WASM during forward(): the stack, and the functions that ran since the one before.
const calls = [];
onCall = (stack) => {
  const coverage = post('Profiler.takePreciseCoverage').result;
  calls.push({ stack, coverage });
};
const query = token(), key = token(), value = token();
await mha.forward(query, key, value, { cache });
onCall = null;
post('Profiler.stopPreciseCoverage');
mha.dispose();
if (!calls.length) throw new Error('forward() made no call into WASM');

const pathOf = (url) => (url.startsWith('file:') ? relative(ROOT, fileURLToPath(url)).split('\\').join('/') : url);
const frames = (stack) => [...stack.matchAll(/at (?:(\S+) \()?(file:[^\s)]+?):\d+:\d+\)?/g)]
  .map((m) => ({ fn: m[1] ?? '(anonymous)', file: pathOf(m[2]) })).filter((f) => f.file.startsWith(SRC));
// What each call into WASM is: the name of the function that made it (an Embind invoker is named
// after what it binds: Object.mhaForwardCached, ClassHandle.setCall; else the JS that called an
// export, such as withHeap for malloc).
const callee = (stack) => stack.split('\n')[2]?.match(/at (\S+)/)?.[1] ?? '?';
// The call that runs the kernels: the core's forward entry (Embind's mhaForwardCached, forward, sdpa).
const forwardAt = calls.findIndex(({ stack }) => /\.(mhaForwardCached|forward|sdpa)$/.test(callee(stack)));
const upTo = (n) => {
  const ran = new Map();  // file → names of the functions that ran
  for (const { coverage } of calls.slice(0, n + 1)) {
    for (const { url, functions } of coverage) {
      const file = pathOf(url);
      if (!file.startsWith(SRC)) continue;
      const names = functions.filter((f) => f.ranges[0].count > 0).map((f) => f.functionName || '(anonymous)');
      if (names.length) ran.set(file, [...new Set([...(ran.get(file) ?? []), ...names])]);
    }
  }
  return ran;
};
const report = (n, what) => {
  const ran = upTo(n);
  const stackFiles = [...new Set(frames(calls[n].stack).map((f) => f.file).reverse())];
  const order = [...new Set([...stackFiles.filter((f) => ran.has(f)), ...[...ran.keys()].sort()])];
  return { what, call: n + 1, count: order.length, files: order.map((f) => ({ file: f, functions: ran.get(f) })),
    stack: frames(calls[n].stack).reverse().map((f) => `${f.file} ${f.fn}`) };
};
const reports = [report(0, `the first call into WASM (${callee(calls[0].stack)})`),
  ...(forwardAt >= 0 ? [report(forwardAt, `the call that runs the kernels (${callee(calls[forwardAt].stack)})`)] : [])];
if (flags.json) {
  console.log(JSON.stringify({ calls: calls.length, reports }, null, 2));
} else {
  console.log(`A cached forward() (weights ${flags.weights}, cache ${flags.cache}, WASM, second call): ${calls.length} calls into WASM, `
    + `in order: ${calls.map(({ stack }) => callee(stack)).join(', ')}`);
  for (const r of reports) {
    console.log(`\nBefore ${r.what}, call ${r.call}: ${r.count} files of ${SRC}`);
    for (const { file, functions } of r.files) console.log(`  ${file}: ${functions.join(', ')}`);
    console.log('  stack at it, outermost first:');
    for (const line of r.stack) console.log(`    ${line}`);
  }
}
