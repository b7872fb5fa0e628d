// The decode benchmark's tables (bench/decode/decode_suite.mjs's results): one line per configuration,
// cache length and storage dtype, with the memory bound, ORT and the speed-up over f32; the
// split of the cached step into a fixed part and a part per cached position; prefill; memory.
import { REFERENCE_DTYPE, stepBytes } from './decode_dtypes.mjs';
import { DIFF_LIMIT } from '../lib/suite.mjs';
import { markdownTable, plainTable } from '../lib/table.mjs';

const fixed = (v, digits = v < 10 ? 3 : 1) => (Number.isFinite(v) ? v.toFixed(digits) : '-');
const ratio = (a, b) => fixed(a / b, 2);
const mib = (bytes) => (bytes / 2 ** 20).toFixed(2);
// f32 cells must agree to DIFF_LIMIT ('!' beyond); a narrow dtype's difference is its rounding.
const diff = ({ maxDiff, error }, limit = DIFF_LIMIT) => (error ? `ERROR: ${error}` : `${maxDiff.toExponential(1)}${maxDiff > limit ? ' !' : ''}`);
export const configText = ({ E, h, hkv }) => `(${E}, ${h}, ${hkv})`;
const boundMs = (bytes, gbps) => (bytes.weights + bytes.cache) / (gbps * 1e6);
const isReference = (r) => r.dtype === REFERENCE_DTYPE;

// ORT's graph with this line's weight storage: its ms, or why it did not run.
const ortSame = (r) => {
  const cell = r.ort[r.dtype];
  if (!cell) return '-';
  return cell.error ? `fails: ${cell.error.slice(0, 60)}` : fixed(cell.ms);
};

/** A decode row ({ ..., cache: { dtype: cell } }) as one line per dtype: { ...row, dtype, mine }. */
export const perDtype = (rows) => rows.flatMap((r) => Object.keys(r.cache).map((dtype) => ({ ...r, dtype, mine: r.cache[dtype] })));

/** Decode table columns (one line per row and dtype); gbps null leaves the bound out (the log). */
export const DECODE_COLUMNS = (gbps) => [
  ['(E, h, hkv)', configText, 'l'],
  ['n', (r) => String(r.n), 'r'],
  ['dtype', (r) => r.dtype, 'l'],
  ['cache ms', (r) => fixed(r.mine.ms), 'r'],
  ...(gbps ? [['bound ms', (r) => fixed(boundMs(r.bytes[r.dtype], gbps)), 'r'],
    ['ms/bound', (r) => ratio(r.mine.ms, boundMs(r.bytes[r.dtype], gbps)), 'r']] : []),
  ['f32/ms', (r) => ratio(r.cache[REFERENCE_DTYPE].ms, r.mine.ms), 'r'],
  ['ORT ms', (r) => fixed(r.ort[REFERENCE_DTYPE].ms), 'r'],
  ['ORT/ms', (r) => ratio(r.ort[REFERENCE_DTYPE].ms, r.mine.ms), 'r'],
  // ORT with its weights stored as this line's (f16 model, MatMulNBits 8-bit), and the faster of
  // its two graphs against this line: ORT's best path.
  ['ORT same ms', (r) => (isReference(r) ? '' : ortSame(r)), 'r'],
  ['ORT best/ms', (r) => ratio(Math.min(r.ort[REFERENCE_DTYPE].ms, r.ort[r.dtype]?.ms ?? Infinity), r.mine.ms), 'r'],
  ['no cache ms', (r) => (isReference(r) ? fixed(r.noCache.ms) : ''), 'r'],
  ['max|Δ| vs f32', (r) => (isReference(r) ? `(b) ${diff(r.noCache)} (c) ${diff(r.ort[REFERENCE_DTYPE])}` : diff(r.mine, Infinity)), 'r'],
  ['best ms', (r) => fixed(r.mine.best), 'r'],
  ['runs', (r) => String(r.mine.runs ?? '-'), 'r'],
];

export const PREFILL_COLUMNS = [
  ['(E, h, hkv)', configText, 'l'],
  ['L', (r) => String(r.L), 'r'],
  ['weights', (r) => r.dtype, 'l'],
  ['isCausal ms', (r) => fixed(r.mine.ms), 'r'],
  ['/f32', (r) => ratio(r.mine.ms, r.causal[REFERENCE_DTYPE].ms), 'r'],
  ['f32 cache ms', (r) => (isReference(r) ? fixed(r.cache.ms) : ''), 'r'],
  ['cache/isCausal', (r) => (isReference(r) ? ratio(r.cache.ms, r.mine.ms) : ''), 'r'],
  ['max|Δ| vs f32', (r) => (isReference(r) ? diff(r.cache) : diff(r.mine, Infinity)), 'r'],
  ['runs', (r) => String(r.mine.runs ?? '-'), 'r'],
];

export const perPrefillDtype = (rows) => rows.flatMap((r) => Object.keys(r.causal).map((dtype) => ({ ...r, dtype, mine: r.causal[dtype] })));

export const MEMORY_COLUMNS = [
  ['(E, h, hkv)', configText, 'l'],
  ['dtype', (r) => r.dtype, 'l'],
  ['weights MiB', (r) => mib(r.expected.weights), 'r'],
  ['heap Δ at load MiB', (r) => mib(r.measured.weights), 'r'],
  [`cache MiB (n)`, (r) => `${mib(r.expected.cache)} (${r.n})`, 'r'],
  ['heap Δ at createCache MiB', (r) => mib(r.measured.cache), 'r'],
  ['bytes per position', (r) => String(r.expected.cache / r.n), 'r'],
];

/**
 * Per configuration and dtype, a least-squares line through (n, best ms) of the cached step: its
 * fixed part (n → 0: the projections and the call) and its part per 1000 cached positions (the
 * attention over the cache), each against the same split of the bound. The best step, not the
 * median: on a shared machine the medians of the longer steps carry most of the noise.
 */
export function splitText(configs, headDim, decodeRows, gbps) {
  return configs.flatMap((config) => perDtype(decodeRows.filter((row) => row.E === config.E)).reduce((groups, row) => {
    (groups.find((g) => g[0].dtype === row.dtype) ?? (groups.push([]), groups.at(-1))).push(row);
    return groups;
  }, []).map((group) => {
    const r = group.filter((row) => Number.isFinite(row.mine.best));
    if (r.length < 2) return null;
    const mean = (f) => r.reduce((s, row) => s + f(row), 0) / r.length;
    const mn = mean((row) => row.n), mt = mean((row) => row.mine.best);
    const slope = mean((row) => (row.n - mn) * (row.mine.best - mt)) / mean((row) => (row.n - mn) ** 2);
    const fixedMs = mt - slope * mn;
    const b = stepBytes(config, headDim, 1000, group[0].dtype);
    const boundFixed = b.weights / (gbps * 1e6), boundPer1000 = b.cache / (gbps * 1e6);
    return `${configText(config)} ${group[0].dtype}, best steps: fixed part (n → 0) ${fixed(fixedMs)} ms vs ${fixed(boundFixed)} ms `
      + `to read the weights (${ratio(fixedMs, boundFixed)}×); per 1000 cached positions ${fixed(slope * 1000)} ms vs `
      + `${fixed(boundPer1000)} ms to read their K/V (${ratio(slope * 1000, boundPer1000)}×)`;
  })).filter(Boolean).join('\n');
}

const breakBetweenConfigs = (r, next) => next.E !== r.E || next.n !== r.n;

export function formatDecode({ decode, prefill, memory }, { configs, headDim, prefillLength }, gbps, { markdown = false } = {}) {
  const table = markdown ? (columns, rows) => markdownTable(columns, rows)
    : (columns, rows) => plainTable(columns, rows, { breakAfter: breakBetweenConfigs });
  return `${table(DECODE_COLUMNS(gbps), perDtype(decode))}\n\n${splitText(configs, headDim, decode, gbps)}\n\n`
    + `Prefill of ${prefillLength} tokens (isCausal forward per weights dtype; the f32 line also an f32 cache's prefill):\n\n`
    + `${table(PREFILL_COLUMNS, perPrefillDtype(prefill))}\n\n`
    + `Memory (expected from §11's byte counts; measured: wasmMemoryInUse() before and after):\n\n${table(MEMORY_COLUMNS, memory)}`;
}
