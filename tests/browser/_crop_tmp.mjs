import { chromium } from 'playwright-core';
const [file, w, y, h, out] = process.argv.slice(2);
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--allow-file-access-from-files'] });
const p = await b.newPage({ viewport: { width: Number(w), height: 1000 } });
await p.goto('file:///dev/null');
await p.setContent(`<body style="margin:0"><img src="file://${file}" style="display:block"></body>`);
await p.waitForFunction(() => document.images[0].complete && document.images[0].naturalWidth > 0);
await p.screenshot({ path: out, clip: { x: 0, y: Number(y), width: Number(w), height: Number(h) }, fullPage: true });
await b.close();
