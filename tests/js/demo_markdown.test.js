// The demo's Markdown converter (web/demo/markdown.js, shown by doc.html): the constructs the
// project's documents use, GitHub's heading anchors (the demo links to them), and no markup
// from a document's text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { markdownToHtml, slug } from '../../web/demo/markdown.js';
import { DOCUMENTS, documentLink } from '../../web/demo/documents.js';

const ROOT = new URL('../../', import.meta.url);

test('headings get GitHub anchors; the demo\'s "the maths" links point at existing ones', () => {
  assert.equal(slug('§6 Nine heads are a 3×3 convolution'), '6-nine-heads-are-a-33-convolution');
  assert.equal(slug("§5 Each head's bilinear form"), '5-each-heads-bilinear-form');
  const page = readFileSync(new URL('web/demo/index.html', ROOT), 'utf8');
  const links = [...page.matchAll(/href="doc\.html\?doc=(math[\w-]*)#([^"]+)"/g)].map((m) => [m[1], m[2]]);
  assert.ok(links.length >= 4, links.join(', '));
  for (const [name, id] of links) {
    assert.ok(DOCUMENTS[name], `no document ${name}`);
    const math = markdownToHtml(readFileSync(new URL(DOCUMENTS[name], ROOT), 'utf8'));
    assert.match(math, new RegExp(`<h2 id="${id}">`), `${name}#${id}`);
  }
});

test('the maths\' index and every page of docs/attention-math/ are shown, their links between them opening rendered', () => {
  const pages = readdirSync(new URL('docs/attention-math/', ROOT)).filter((f) => f.endsWith('.md'))
    .map((f) => `docs/attention-math/${f}`);
  assert.ok(pages.length >= 2, pages.join(', '));
  assert.deepEqual(pages.filter((path) => !Object.values(DOCUMENTS).includes(path)), []);
  const root = new URL('https://example.org/demo/');
  const at = (path) => new URL(path, root);
  assert.equal(documentLink('attention-math/heads.md#4-multi-head-attention', at('docs/attention-math.md'), root),
    'doc.html?doc=math-heads#4-multi-head-attention');
  assert.equal(documentLink('../attention-math.md', at('docs/attention-math/heads.md'), root), 'doc.html?doc=math');
  assert.equal(documentLink('../webgpu.md', at('docs/attention-math/scores.md'), root), 'https://example.org/demo/docs/webgpu.md');
  assert.equal(documentLink('#notation', at('docs/attention-math/basics.md'), root), '#notation');
  assert.equal(documentLink('https://pytorch.org/', at('README.md'), root), 'https://pytorch.org/');
});

test('blocks: fenced code (also inside a list item), tables, nested lists, quotes, paragraphs', () => {
  const html = markdownToHtml([
    '# Title', '', 'Some **bold**, *em* and `a < b` text.', '', '| a | b |', '|---|---|', '| `x\\|y` | 2 |', '',
    '- one', '  - nested', '- two:', '', '  ```text', '  Z = Q Kᵀ', '  ```', '', '1. first', '2. second', '', '> quoted', '', '---',
  ].join('\n'));
  assert.equal(html, [
    '<h1 id="title">Title</h1>',
    '<p>Some <strong>bold</strong>, <em>em</em> and <code>a &lt; b</code> text.</p>',
    '<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td><code>x|y</code></td><td>2</td></tr></tbody></table>',
    '<ul><li>one\n<ul><li>nested</li></ul></li><li>two:\n<pre><code class="language-text">Z = Q Kᵀ</code></pre></li></ul>',
    '<ol><li>first</li><li>second</li></ol>',
    '<blockquote><p>quoted</p></blockquote>',
    '<hr>',
  ].join('\n'));
});

test('a document cannot inject markup: text and code are escaped, link targets quoted', () => {
  const html = markdownToHtml('<script>alert(1)</script> [x](javascript:"a") ```<b>```');
  assert.doesNotMatch(html, /<script|<b>|"a"|href="javascript/);
  assert.match(html, /&lt;script&gt;/);
});

test('every document the demo shows renders with no Markdown left over', () => {
  for (const path of Object.values(DOCUMENTS)) {
    const text = markdownToHtml(readFileSync(new URL(path, ROOT), 'utf8'))
      .replace(/<pre>[\s\S]*?<\/pre>|<code>[\s\S]*?<\/code>/g, '');
    assert.doesNotMatch(text, /\*\*|`|^\||^#{1,6} /m, path);
  }
});
