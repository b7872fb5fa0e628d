#!/usr/bin/env node
// onnxruntime's own attention operator tests put to the package: every case of the
// GroupQueryAttention, MultiHeadAttention and Attention test files of onnxruntime-web
// (js/web/test/data/ops/*.jsonc in onnxruntime's repository; not in this one) that the package
// can express, compared with onnxruntime's expected outputs and with a float64 evaluation of the
// op's definition. Prints one line per case and the counts; --json FILE writes the results.
//   node scripts/check_ort_op_cases.mjs DIR [--json FILE]
// DIR holds the .jsonc files (any of attention.jsonc, multihead-attention.jsonc,
// group-query-attention*.jsonc). Float32 cases pass within 1e-4 + 1e-4·|expected| of
// onnxruntime's values (printed to 6 decimals); float16 ones within one float16 step of them.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as api from '../web/src/node.js';
import { ATOL, RTOL } from '../tests/contract/compare.mjs';
import { readOpFile } from './ort_op_cases/jsonc.mjs';
import { evaluate } from './ort_op_cases/float64.mjs';
import { problemOf } from './ort_op_cases/problems.mjs';
import { runOurs } from './ort_op_cases/run_ours.mjs';

const FILES = /^(attention|multihead-attention|group-query-attention.*)\.jsonc$/;
const [dir, ...rest] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node scripts/check_ort_op_cases.mjs DIR [--json FILE]');
  process.exit(2);
}
const jsonOut = rest[0] === '--json' ? rest[1] : null;

/** Largest |a − b| over b's length; a may hold the last n positions only (a windowed cache): then b's tail per head. */
function maxDiff(a, b, { heads = 1, tail = false } = {}) {
  if (!a || !b) return null;
  let worst = 0;
  const per = b.length / heads, n = a.length / heads;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(a[h * n + i] - b[h * per + (tail ? per - n : 0) + i]));
  }
  return worst;
}

/** Within onnxruntime's printed values: float32 the contract's ATOL + RTOL·|x|, float16 one step of x's binade (2^-10·|x|, at least 2^-14) plus 1e-4. */
function within(a, b, dtype) {
  if (!a || !b) return true;
  return a.every((x, i) => Math.abs(x - b[i]) <= (dtype === 'float16' ? 1e-4 + Math.max(2 ** -14, 2 ** (Math.floor(Math.log2(Math.abs(b[i]) || 1)) - 10)) : ATOL + RTOL * Math.abs(b[i])));
}

const results = [];
for (const file of readdirSync(dir).filter((f) => FILES.test(f)).sort()) {
  for (const group of readOpFile(join(dir, file))) {
    for (const c of group.cases) {
      const name = `${file}: ${group.name} / ${c.name}`;
      const p = problemOf(group, c);
      if (p.reason) {
        results.push({ name, operator: group.operator, status: 'not expressible', reason: p.reason });
        continue;
      }
      let ours;
      try {
        ours = await runOurs(api, p);
      } catch (e) {
        results.push({ name, operator: group.operator, status: 'error', reason: `${e.name}: ${e.message}` });
        continue;
      }
      if (ours.reason) {
        // The float64 evaluation still says whether the case is what we read it as (position ids included).
        const ortVsFloat64 = maxDiff(p.expected.output.values, evaluate(p).output);
        results.push({ name, operator: group.operator, status: ours.positionIds ? 'needs positionIds' : 'not expressible', reason: `${ours.reason} (|ORT−f64| ${ortVsFloat64.toExponential(1)})`, ortVsFloat64 });
        continue;
      }
      const truth = evaluate(p);
      const ex = p.expected;
      const kvHeads = p.B * p.hkv;
      const presentTail = (x) => ({ heads: kvHeads, tail: x !== null });
      const diffs = {
        oursVsOrt: Math.max(maxDiff(ours.output, ex.output.values), maxDiff(ours.presentKey, ex.presentKey?.values, presentTail(ours.presentKey)) ?? 0,
          maxDiff(ours.presentValue, ex.presentValue?.values, presentTail(ours.presentValue)) ?? 0),
        oursVsFloat64: maxDiff(ours.output, truth.output),
        ortVsFloat64: maxDiff(ex.output.values, truth.output),
      };
      const presentsOk = !ex.presentKey || !ours.presentKey || maxDiff(ours.presentKey, ex.presentKey.values, presentTail(1)) <= (p.dtype === 'float16' ? 2e-3 : 1e-4) * 8;
      const ok = ours.output.length === ex.output.values.length && within(ours.output, ex.output.values, p.dtype) && presentsOk;
      // Where onnxruntime's expected output is off the op's definition and ours is on it.
      const ortOff = !ok && within(ours.output, truth.output, p.dtype) && !within(ex.output.values, truth.output, p.dtype);
      results.push({ name, operator: group.operator, dtype: p.dtype, status: ok ? 'pass' : ortOff ? 'ORT off float64' : 'fail', presents: Boolean(ex.presentKey && ours.presentKey), ...diffs });
    }
  }
}

const fmt = (x) => (x === null || x === undefined ? '-' : x.toExponential(1));
for (const r of results) {
  const figures = r.status === 'pass' || r.status === 'fail' || r.status === 'ORT off float64' ? `|ours−ORT| ${fmt(r.oursVsOrt)}  |ours−f64| ${fmt(r.oursVsFloat64)}  |ORT−f64| ${fmt(r.ortVsFloat64)}${r.presents ? '  (+present k/v)' : ''}` : r.reason;
  console.log(`${r.status.padEnd(17)} ${r.name}: ${figures}`);
}
const count = (s) => results.filter((r) => r.status === s).length;
console.log(`\n${results.length} cases: ${results.length - count('not expressible')} expressible (${count('needs positionIds')} of them need positionIds), `
  + `${count('pass')} pass, ${count('ORT off float64')} match float64 where onnxruntime's expected output does not, `
  + `${count('fail')} fail, ${count('error')} error, ${count('not expressible')} not expressible`);
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(results, null, 1)}\n`);
