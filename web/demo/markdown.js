// A small Markdown-to-HTML converter for the project's own documents (the README, the maths of
// docs/attention-math.md, the model's README), so that the demo shows them rendered instead of
// as raw text. It knows what those documents use: ATX headings (with GitHub's anchor ids), fenced
// code blocks (also inside list items), tables, bullet and numbered lists (nested by indent),
// block quotes, rules, paragraphs; inline code, bold, italics, links and images. Everything is
// HTML-escaped first: a document cannot inject markup. Runs in the browser and in Node.

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);

/** GitHub's heading anchor: lower case, punctuation and symbols dropped, spaces → hyphens. */
export const slug = (text) => text.toLowerCase().replace(/`/g, '').replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-');

/**
 * Inline markup of one block's text. link(url) maps a link or image target (relative ones
 * against the document) to the URL the page uses.
 */
function inline(text, rewrite) {
  // Only web links and relative ones: a javascript: (or data:) target would be script.
  const link = (url) => (/^[a-z][\w+.-]*:/i.test(url) && !/^(https?|mailto):/i.test(url) ? '#' : rewrite(url));
  const codes = [];
  // Code spans first: nothing inside them is markup. \u0000 never occurs in the documents.
  let out = text.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_, __, code) => {
    codes.push(`<code>${escapeHtml(code.trim())}</code>`);
    return `\u0000${codes.length - 1}\u0000`;
  });
  out = escapeHtml(out)
    .replace(/!\[([^\]]*)\]\(([^)\s]+)\)/g, (_, alt, src) => `<img src="${escapeHtml(link(src))}" alt="${alt}">`)
    .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_, label, href) => `<a href="${escapeHtml(link(href))}">${label}</a>`)
    .replace(/&lt;(https?:\/\/[^\s&]+)&gt;/g, (_, url) => `<a href="${url}">${url}</a>`)
    .replace(/\*\*(\S(?:[\s\S]*?\S)?)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w*])\*(\S(?:[\s\S]*?\S)?)\*(?!\w)/g, '$1<em>$2</em>')
    .replace(/(^|[^\w])_(\S(?:[\s\S]*?\S)?)_(?!\w)/g, '$1<em>$2</em>');
  return out.replace(/\u0000(\d+)\u0000/g, (_, i) => codes[Number(i)]);
}

const indentOf = (line) => line.match(/^ */)[0].length;
const dedent = (lines, n) => lines.map((l) => l.slice(Math.min(n, indentOf(l))));
const LIST_ITEM = /^( *)([-*+]|\d+[.)]) +/;
const cells = (row) => row.trim().replace(/^\||\|$/g, '').split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));

/** Renders lines (one document, or the inside of a list item or quote) to HTML blocks. */
function blocks(lines, link) {
  const html = [];
  let i = 0;
  const blank = (l) => l.trim() === '';
  while (i < lines.length) {
    const line = lines[i];
    if (blank(line)) {
      i++;
      continue;
    }
    const fence = line.match(/^( *)(```+|~~~+)\s*([\w-]*)/);
    if (fence) {
      const [, indent, marker, lang] = fence;
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(marker); i++) body.push(lines[i]);
      i++;
      const cls = lang ? ` class="language-${lang}"` : '';
      html.push(`<pre><code${cls}>${escapeHtml(dedent(body, indent.length).join('\n'))}</code></pre>`);
      continue;
    }
    const heading = line.match(/^(#{1,6}) +(.*?) *#*$/);
    if (heading) {
      const level = heading[1].length;
      html.push(`<h${level} id="${escapeHtml(slug(heading[2]))}">${inline(heading[2], link)}</h${level}>`);
      i++;
      continue;
    }
    if (/^ {0,3}([-*_])( *\1){2,} *$/.test(line)) {
      html.push('<hr>');
      i++;
      continue;
    }
    if (line.trim().startsWith('|') && i + 1 < lines.length && /^\s*\|?\s*:?-+/.test(lines[i + 1])) {
      const head = cells(line);
      const rows = [];
      for (i += 2; i < lines.length && lines[i].trim().startsWith('|'); i++) rows.push(cells(lines[i]));
      const tr = (row, tag) => `<tr>${row.map((c) => `<${tag}>${inline(c, link)}</${tag}>`).join('')}</tr>`;
      html.push(`<table><thead>${tr(head, 'th')}</thead><tbody>${rows.map((r) => tr(r, 'td')).join('')}</tbody></table>`);
      continue;
    }
    if (/^ {0,3}>/.test(line)) {
      const quoted = [];
      for (; i < lines.length && /^ {0,3}>/.test(lines[i]); i++) quoted.push(lines[i].replace(/^ {0,3}> ?/, ''));
      html.push(`<blockquote>${blocks(quoted, link)}</blockquote>`);
      continue;
    }
    const item = line.match(LIST_ITEM);
    if (item) {
      const list = listAt(lines, i, item, link);
      html.push(list.html);
      i = list.end;
      continue;
    }
    const paragraph = [];
    for (; i < lines.length && !blank(lines[i]); i++) {
      if (paragraph.length && (/^(#{1,6} |```|~~~|>)/.test(lines[i].trim()) || LIST_ITEM.test(lines[i]))) break;
      paragraph.push(lines[i].trim());
    }
    html.push(`<p>${inline(paragraph.join('\n'), link)}</p>`);
  }
  return html.join('\n');
}

/**
 * The list whose first item `item` (LIST_ITEM's match) is at lines[start]: its items while they
 * keep its indent and kind (ordered or not), each rendered by blocks(). { html, end }: end is the
 * first line after it.
 */
function listAt(lines, start, item, link) {
  const blank = (l) => l.trim() === '';
  const ordered = /\d/.test(item[2]);
  const base = item[1].length;
  const items = [];
  let i = start;
  while (i < lines.length) {
    const m = lines[i].match(LIST_ITEM);
    if (!m || m[1].length !== base || /\d/.test(m[2]) !== ordered) break;
    const width = m[0].length;
    const body = [lines[i].slice(width)];
    // The item goes on while lines are indented under it (or blank inside it).
    for (i++; i < lines.length; i++) {
      const next = lines[i];
      if (blank(next)) {
        if (i + 1 < lines.length && indentOf(lines[i + 1]) > base && !blank(lines[i + 1])) body.push('');
        else break;
      } else if (indentOf(next) > base) {
        body.push(next.slice(Math.min(width, indentOf(next))));
      } else if (!LIST_ITEM.test(next) && !/^(#|```|~~~|\||>)/.test(next.trim()) && !blank(lines[i - 1])) {
        body.push(next);  // a lazy continuation line of the item's paragraph
      } else {
        break;
      }
    }
    items.push(body);
    while (i < lines.length && blank(lines[i]) && i + 1 < lines.length && lines[i + 1].match(LIST_ITEM)?.[1].length === base) i++;
  }
  const tag = ordered ? 'ol' : 'ul';
  const html = `<${tag}>${items.map((body) => `<li>${blocks(body, link).replace(/^<p>([\s\S]*?)<\/p>(?=\n|$)/, '$1')}</li>`).join('')}</${tag}>`;
  return { html, end: i };
}

/** Markdown → HTML. options.link(url): how a link or image target is rewritten (default: as is). */
export function markdownToHtml(markdown, { link = (url) => url } = {}) {
  return blocks(markdown.replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n'), link);
}
