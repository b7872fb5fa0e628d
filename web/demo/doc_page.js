// doc.html?doc=<name>#<heading>: one of the project's Markdown documents, rendered in the page
// (markdown.js), so that the demo's "the maths" and README links show text a visitor can read.
// The documents sit where the repository keeps them; scripts/build_demo.mjs copies the same ones
// (DOCUMENTS is the one list of both). <body> gets data-status = ok | error.
import { markdownToHtml } from './markdown.js';
import { DOCUMENTS, documentLink } from './documents.js';

const setStatus = (status) => { document.body.dataset.status = status; };

async function show() {
  const name = new URLSearchParams(location.search).get('doc') ?? 'readme';
  const doc = DOCUMENTS[name];
  const article = document.getElementById('doc');
  if (!doc) {
    article.textContent = `No document '${name}' here: try ${Object.keys(DOCUMENTS).map((k) => `?doc=${k}`).join(', ')}.`;
    setStatus('error');
    return;
  }
  const root = new URL('../../', location.href);
  const source = new URL(doc, root);
  const response = await fetch(source);
  if (!response.ok) throw new Error(`${doc}: HTTP ${response.status}`);
  // A relative link or image in a document is relative to the document's own place; one to
  // another of the documents opens it here.
  const link = (url) => documentLink(url, source, root);
  article.innerHTML = markdownToHtml(await response.text(), { link });
  document.title = `${article.querySelector('h1')?.textContent ?? doc} · webattention`;
  if (location.hash) document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView();
  setStatus('ok');
}

show().catch((e) => {
  console.error(e);
  document.getElementById('doc').textContent = `Could not show the document: ${e.message}`;
  setStatus('error');
});
