// The README's code blocks as the apps a user would make of them. Every fenced block is tagged by
// an HTML comment on the line before it (invisible on a rendered page):
//
//   <!-- snippet: KIND:APP[,KIND:APP...] FILE [prints=TEXT] -->
//
// FILE is the file the block is saved as in each app named; KIND says how the app runs (node: a
// fresh `npm init -y` project, `node FILE`; browser: that project served as it is, opened in
// Chromium; vite: a Vite app, `vite build` served, and `vite dev`); TEXT must appear in the app's
// output (Node's stdout, the page's console). A fenced block without a tag, or with a kind that
// has no runner, is an error: every block must run.
import { readFileSync } from 'node:fs';

export const KINDS = ['node', 'browser', 'vite'];
const TAG = /^<!-- snippet: (\S+) (\S+)(?: prints=(.*?))? -->$/;
const FENCE = /^```(\S*)\s*$/;

/**
 * Reads README text into { apps, errors }: apps a Map 'kind:name' → { kind, name, files: Map
 * FILE → text, prints: [TEXT] } in the order first seen; errors what is wrong with the tags.
 */
export function readmeApps(text) {
  const lines = text.split('\n');
  const apps = new Map();
  const errors = [];
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(FENCE);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && FENCE.test(l) && l.trim() === '```');
    if (end < 0) {
      errors.push(`line ${i + 1}: a fenced block that never closes`);
      break;
    }
    const body = `${lines.slice(i + 1, end).join('\n')}\n`;
    const tag = (lines[i - 1] ?? '').match(TAG);
    if (!tag) errors.push(`line ${i + 1}: a \`\`\`${open[1]} block without a <!-- snippet: ... --> line before it: no test runs it`);
    for (const id of tag ? tag[1].split(',') : []) {
      const [kind, name] = id.split(':');
      if (!KINDS.includes(kind) || !name) {
        errors.push(`line ${i}: '${id}' is not KIND:APP with KIND one of ${KINDS.join(', ')}`);
        continue;
      }
      if (!apps.has(id)) apps.set(id, { kind, name, files: new Map(), prints: [] });
      const app = apps.get(id);
      if (app.files.has(tag[2])) errors.push(`line ${i}: ${id} has two blocks saved as ${tag[2]}`);
      app.files.set(tag[2], body);
      if (tag[3]) app.prints.push(tag[3]);
    }
    i = end;
  }
  for (const [id, app] of apps) {
    if (app.kind === 'node' && app.files.size !== 1) errors.push(`${id}: a node app is one file, not ${[...app.files.keys()].join(', ')}`);
  }
  return { apps, errors };
}

export const readmeAppsOf = (file) => readmeApps(readFileSync(file, 'utf8'));
