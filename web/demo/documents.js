// The Markdown documents the demo shows rendered (doc.html?doc=<name>), by their path in the
// repository; the page fetches them from there (web/demo/ is two levels down), and
// scripts/build_demo.mjs copies the same paths into the static folder. The maths is an index
// (docs/attention-math.md) and its pages, each shown here so that the index's links open rendered.
export const DOCUMENTS = {
  readme: 'README.md',
  math: 'docs/attention-math.md',
  'math-basics': 'docs/attention-math/basics.md',
  'math-heads': 'docs/attention-math/heads.md',
  'math-decoding': 'docs/attention-math/decoding.md',
  'math-scores': 'docs/attention-math/scores.md',
  'math-storage': 'docs/attention-math/storage.md',
  model: 'web/model/README.md',
};

/**
 * Where a link (or image) of a document shown here leads, `source` being the document's URL and
 * `root` the repository's: a relative link to another of DOCUMENTS opens it rendered too
 * (doc.html?doc=<name>#anchor); any other relative one is relative to the document's own place;
 * absolute links and #anchors stay as written.
 */
export function documentLink(url, source, root) {
  if (/^([a-z]+:|#)/i.test(url)) return url;
  const target = new URL(url, source);
  const name = Object.keys(DOCUMENTS).find((key) => new URL(DOCUMENTS[key], root).href === target.href.split('#')[0]);
  return name ? `doc.html?doc=${name}${target.hash}` : target.href;
}
