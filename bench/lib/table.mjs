// Text and Markdown tables for the benchmarks' results (bench/lib/suite.mjs, bench/decode/decode_suite.mjs).
// A column is [heading, (row) => cell text, 'l' | 'r' (alignment)].

/**
 * Fixed-width plain-text table. breakAfter(row, next) puts a blank line between groups of rows;
 * suffix(row) is appended after a row's last cell (e.g. its error).
 */
export function plainTable(columns, rows, { breakAfter = () => false, suffix = () => '' } = {}) {
  const body = rows.map((r) => columns.map(([, f]) => f(r)));
  const widths = columns.map(([head], i) => Math.max(head.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => (columns[i][2] === 'r' ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ');
  const out = [line(columns.map(([head]) => head)), widths.map((w) => '-'.repeat(w)).join('  ')];
  rows.forEach((r, i) => {
    out.push(line(body[i]) + suffix(r));
    if (i + 1 < rows.length && breakAfter(r, rows[i + 1])) out.push('');
  });
  return out.join('\n');
}

/** Markdown table; edit(row, cells) may change a row's cells (already '|'-escaped) before output. */
export function markdownTable(columns, rows, { edit = (r, cells) => cells } = {}) {
  const escape = (s) => s.replace(/\|/g, '\\|');
  const out = [`| ${columns.map(([head]) => escape(head)).join(' | ')} |`,
    `|${columns.map(([, , a]) => (a === 'r' ? '---:' : '---')).join('|')}|`];
  for (const r of rows) out.push(`| ${edit(r, columns.map(([, f]) => escape(f(r)))).join(' | ')} |`);
  return out.join('\n');
}
