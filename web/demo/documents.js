// The Markdown documents the demo shows rendered (doc.html?doc=<name>), by their path in the
// repository; the page fetches them from there (web/demo/ is two levels down), and
// scripts/build_demo.mjs copies the same paths into the static folder.
export const DOCUMENTS = {
  readme: 'README.md',
  math: 'docs/attention-math.md',
  model: 'web/model/README.md',
};
