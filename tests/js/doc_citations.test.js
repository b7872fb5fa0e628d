// What code comments may cite about measurements: a section of one of the pages of
// docs/performance/ by its page and anchor (docs/performance/decode.md#decode), which stays put when
// a table is measured anew; docs/performance.md is the pages' index. Not a date (the dated notes of
// bench/log/ are history, and a date says nothing about where to look), and not
// docs/benchmarks.md, the lab log those two replaced. docs/webgpu.md and docs/attention-math.md are
// indexes of pages too (SPLIT_DOCS): a section is cited by its page, with its anchor
// (docs/webgpu/tensors.md#tensors-on-the-gpu) or, in the maths, its number
// (docs/attention-math/decoding.md §9). Every page cited must exist and have the anchor (or the
// number) as a heading (GitHub's anchors, as the demo's Markdown converter makes them); so must the
// Markdown links into the split docs (an anchor of an index, whose sections moved to the pages, is
// no longer one of its headings). The maths' index is cited with numbers only for sections on more
// than one page (docs/attention-math.md §7–§9). Code comments, tests, the demo, the type
// declarations, the READMEs and the docs are read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { dirname, join, relative, extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { slug } from '../../web/demo/markdown.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CODE_FOLDERS = ['web/src', 'cpp', 'bench', 'scripts'];
const SKIP = new Set(['node_modules', 'dist', 'build', '.git']);
const C_LIKE = new Set(['.js', '.mjs', '.cjs', '.ts', '.h', '.hpp', '.c', '.cc', '.cpp', '.wgsl']);
const HASH = new Set(['.sh', '.py', '.cmake']);
const DATE = /\b(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b/;
// The docs split into pages, docs/<doc>/<page>.md, listed by their index docs/<doc>.md.
const SPLIT_DOCS = ['performance', 'webgpu', 'attention-math'];
const SPLIT = SPLIT_DOCS.join('|');
// docs/<doc>/<page>.md#anchor, and an index's docs/<doc>.md#anchor (which must fail).
const CITATION = new RegExp(`docs/((?:${SPLIT})(?:/[\\w-]+)?\\.md)#([\\w-]+)`, 'g');
// A Markdown link's target (relative to the repository) inside the split docs.
const SPLIT_TARGET = new RegExp(`^docs/(?:${SPLIT})(?:\\.md|/)`);
// The maths' sections by number, also across a comment's line break: docs/attention-math/<page>.md
// §9, and the index's docs/attention-math.md §3, §7 or §7–§9.
const SECTION_CITATION = /docs\/(attention-math(?:\/[\w-]+)?\.md)`?(?:\s|\/\/|#|\*)*?(§\d+(?:(?:\s*[–-]\s*|,\s*|,?\s+and\s+)§\d+)*)/g;

/** The sections of a list: '§2, §5 and §6' → §2, §5, §6; '§7–§9' → §7, §8, §9. */
const sectionList = (list) => [...list.matchAll(/§(\d+)(?:\s*[–-]\s*§(\d+))?/g)]
  .flatMap(([, a, b]) => Array.from({ length: Number(b ?? a) - Number(a) + 1 }, (_, i) => `§${Number(a) + i}`));

/** The Markdown pages of docs/ and the dated notes of bench/log/. */
function markdownDocs() {
  return ['docs', 'bench/log'].flatMap((dir) => readdirSync(join(ROOT, dir), { recursive: true })
    .filter((f) => f.endsWith('.md')).map((f) => join(ROOT, dir, f)));
}

/** The anchors of a Markdown file's headings, outside fenced code, and the maths' numbers (§9). */
function headings(file) {
  let fenced = false;
  const anchors = new Set();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && line.match(/^#{1,6}\s+(.*)$/);
    if (m) anchors.add(slug(m[1].trim()));
    const n = m && m[1].match(/^§\d+(?=\s)/);
    if (n) anchors.add(n[0]);
  }
  return anchors;
}

const isCode = (path) => C_LIKE.has(extname(path)) || HASH.has(extname(path)) || extname(path) === '.html';

function* files(dir, wanted = isCode) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path, wanted);
    else if (wanted(path)) yield path;
  }
}

/**
 * The comments of a source file, as [line number, text]: `//` to the line's end (not `://`, nor
 * inside a quoted string that opens before it on that line), every line of a block comment that
 * starts a line (`/*`, ` * `), `#` comments in shell and Python, `<!-- -->` in HTML.
 */
export function comments(source, ext) {
  const out = [];
  let inBlock = false;
  source.split('\n').forEach((line, i) => {
    const n = i + 1;
    const trimmed = line.trim();
    if (ext === '.html') {
      if (inBlock || trimmed.includes('<!--')) out.push([n, line]);
      if (trimmed.includes('<!--')) inBlock = !trimmed.includes('-->', trimmed.indexOf('<!--'));
      else if (inBlock && trimmed.includes('-->')) inBlock = false;
      // Scripts inside a page: their line comments too.
      const m = line.match(/(?:^|[^:'"`\\])\/\/(.*)$/);
      if (m) out.push([n, m[1]]);
      return;
    }
    if (HASH.has(ext)) {
      const m = line.match(/(?:^|\s)#(?!!)(.*)$/);
      if (m) out.push([n, m[1]]);
      return;
    }
    if (inBlock) {
      out.push([n, line]);
      if (line.includes('*/')) inBlock = false;
      return;
    }
    if (trimmed.startsWith('/*')) {
      out.push([n, line]);
      inBlock = !trimmed.includes('*/', 2);
      return;
    }
    // A line comment: `//` outside the line's quoted strings (a URL's `://` is not one).
    let quote = null;
    for (let k = 0; k < line.length; k++) {
      const c = line[k];
      if (quote) {
        if (c === '\\') k++;
        else if (c === quote) quote = null;
      } else if (c === '"' || c === "'" || c === '`') quote = c;
      else if (c === '/' && line[k + 1] === '/' && line[k - 1] !== ':') {
        out.push([n, line.slice(k + 2)]);
        break;
      }
    }
  });
  return out;
}

const codeFiles = CODE_FOLDERS.flatMap((folder) => [...files(join(ROOT, folder))]);
// Where the split docs are cited: code comments, tests (and their READMEs), the demo, the type
// declarations, the READMEs, docs/ and bench/log/ (not this file, whose examples are not citations).
const citingFiles = [...codeFiles,
  ...['tests', 'web/demo', 'web/types'].flatMap((dir) => [...files(join(ROOT, dir), (f) => isCode(f) || f.endsWith('.md'))]),
  ...['README.md', 'bench/README.md', 'web/index.d.ts'].map((f) => join(ROOT, f)), ...markdownDocs()]
  .filter((file) => file !== fileURLToPath(import.meta.url));

test('the comment reader finds dates in comments, not in strings or URLs', () => {
  const found = (src, ext) => comments(src, ext).filter(([, text]) => DATE.test(text)).map(([n]) => n);
  assert.deepEqual(found([
    'const d = "2026-11-27"; // measured on 2026-11-27',
    "fetch('https://example.org/2026-11-27');",
    '/* a block',
    ' * 2026-11-26 13:30 */',
    'x = 1;  // nothing dated here',
  ].join('\n'), '.js'), [1, 4]);
  assert.deepEqual(found('echo 2026-11-27\n# run 2026-11-27 evening\n', '.sh'), [2]);
  assert.deepEqual(found('// (docs/benchmarks.md, 2026-11-27, afternoon)\n', '.h'), [1]);
  assert.deepEqual(found('<!-- 2026-11-21 -->\n<p>2026-11-21</p>\n', '.html'), [1]);
});

test('no comment in web/src, cpp/, bench/ or scripts/ cites a date', () => {
  assert.ok(codeFiles.length > 100, `${codeFiles.length} files`);
  const dated = codeFiles.flatMap((file) => comments(readFileSync(file, 'utf8'), extname(file))
    .filter(([, text]) => DATE.test(text))
    .map(([n, text]) => `${relative(ROOT, file)}:${n}: ${text.trim()}`));
  assert.deepEqual(dated, [], 'cite a section of docs/performance/ (docs/performance/<page>.md#anchor) instead');
});

test('nothing cites docs/benchmarks.md (now docs/performance.md and bench/log/)', () => {
  const others = [join(ROOT, 'README.md'), ...[...files(join(ROOT, 'tests'))]];
  const citing = [...codeFiles, ...others, ...markdownDocs()].filter((file) => file !== fileURLToPath(import.meta.url))
    .filter((file) => readFileSync(file, 'utf8').includes('docs/benchmarks.md'))
    .map((file) => relative(ROOT, file));
  assert.deepEqual(citing, []);
});

const pagesOf = (doc) => readdirSync(join(ROOT, 'docs', doc)).filter((f) => f.endsWith('.md'));

test('every docs/<doc>/<page>.md#anchor (or §n) cited in code and docs is a heading of that page', () => {
  const anchorsOf = new Map(SPLIT_DOCS.flatMap((doc) => [`docs/${doc}.md`, ...pagesOf(doc).map((f) => `docs/${doc}/${f}`)])
    .map((page) => [page, headings(join(ROOT, page))]));
  const has = (page, anchor) => anchorsOf.get(page)?.has(anchor);
  assert.ok(has('docs/performance/decode.md', 'decode') && has('docs/performance/prefill.md', 'prefill')
    && has('docs/performance/memory_and_startup.md', 'cold-start') && has('docs/webgpu/kernels.md', 'host-copies')
    && has('docs/attention-math/decoding.md', '§9'), [...anchorsOf.keys()].join(', '));
  const mathPageWith = (section) => [...anchorsOf].find(([page, anchors]) =>
    page.startsWith('docs/attention-math/') && anchors.has(section))?.[0];
  const cited = [];
  const onOnePage = [];
  for (const file of citingFiles) {
    const text = readFileSync(file, 'utf8');
    const name = relative(ROOT, file);
    for (const m of text.matchAll(CITATION)) cited.push([name, `docs/${m[1]}`, m[2]]);
    for (const m of text.matchAll(SECTION_CITATION)) {
      const sections = sectionList(m[2]);
      if (m[1] !== 'attention-math.md') cited.push(...sections.map((section) => [name, `docs/${m[1]}`, section]));
      else if (new Set(sections.map(mathPageWith)).size < 2) onOnePage.push(`${name}: docs/${m[1]} ${m[2]}`);
    }
    // Markdown links, relative to the file (docs/'s performance/decode.md#decode, #decode inside a
    // page, decode.md#decode between pages, bench/log/'s ../../docs/performance/decode.md#decode).
    if (extname(file) !== '.md') continue;
    for (const m of text.matchAll(/\]\(([\w./-]*)#([\w-]+)\)/g)) {
      const target = relative(ROOT, m[1] ? join(dirname(file), m[1]) : file).split('\\').join('/');
      if (SPLIT_TARGET.test(target)) cited.push([name, target, m[2]]);
    }
  }
  for (const doc of SPLIT_DOCS) {
    const count = cited.filter(([, page]) => page.startsWith(`docs/${doc}`)).length;
    assert.ok(count >= 15, `${count} citations of docs/${doc}`);
  }
  const missing = cited.filter(([, page, anchor]) => !has(page, anchor))
    .map(([file, page, anchor]) => `${file}: ${page}${anchor.startsWith('§') ? ' ' : '#'}${anchor}${anchorsOf.has(page) ? '' : ' (no such page)'}`);
  assert.deepEqual(missing, [], [...anchorsOf].map(([page, anchors]) => `${page}: ${[...anchors].join(', ')}`).join('\n'));
  assert.deepEqual(onOnePage, [], 'sections on one page: cite the page (docs/attention-math/<page>.md §n)');
});

for (const doc of SPLIT_DOCS) {
  test(`docs/${doc}.md links every section of every page of docs/${doc}/, each page links back`, () => {
    const index = readFileSync(join(ROOT, `docs/${doc}.md`), 'utf8');
    const linked = new Set([...index.matchAll(/\]\(([\w-]+\/[\w-]+\.md#[\w-]+)\)/g)].map((m) => m[1]));
    const pages = pagesOf(doc);
    const sections = pages.flatMap((f) => readFileSync(join(ROOT, 'docs', doc, f), 'utf8').split('\n')
      .filter((line) => line.startsWith('## ')).map((line) => `${doc}/${f}#${slug(line.slice(3).trim())}`));
    assert.ok(pages.length >= 2 && sections.length >= pages.length, `${pages.length} pages, ${sections.length} sections`);
    assert.deepEqual(sections.filter((s) => !linked.has(s)), []);
    // A title, then a line that points back to the index.
    const astray = pages.filter((f) => !new RegExp(`^# .+\\n\\n.*\\]\\(\\.\\./${doc}\\.md\\)`)
      .test(readFileSync(join(ROOT, 'docs', doc, f), 'utf8')));
    assert.deepEqual(astray, []);
  });
}

test('every note of bench/log/ is listed in its README.md, and every line there names a note', () => {
  const dir = join(ROOT, 'bench/log');
  const notes = readdirSync(dir).filter((f) => f.endsWith('.md') && f !== 'README.md').sort();
  const listed = [...readFileSync(join(dir, 'README.md'), 'utf8').matchAll(/^- \[([^\]]+)\]\(([^)]+)\)/gm)];
  assert.deepEqual(listed.map((m) => m[2]).sort(), notes);
  for (const m of listed) assert.equal(m[1], m[2], 'the link text is the file name');
  for (const note of notes) assert.match(note, /^\d{4}-\d\d-\d\d-[a-z0-9-]+\.md$/, note);
});
