#!/usr/bin/env -S node --max-semi-space-size=4 --optimize-for-size
// Thin launcher for the bundle `npm run build` (also run on `npm install`) makes: dist/bundle/
// chartpilot.js, one file instead of ~650 modules, about half of each start's CPU
// (scripts/bundler.ts). Where only tsc has run, tsc's output runs instead, and says so on stderr:
// the same code, slower to start. The image carries the bundle only, so there it cannot happen.
// Node 24 or later: the code uses APIs older Nodes lack (node 20 dies inside undici with a
// TypeError), so say so in one line before loading anything.
const [major] = process.versions.node.split('.').map(Number);
if (major < 24) {
  process.stderr.write(
    `chartpilot needs Node.js 24 or later; this is ${process.version} (${process.execPath}). ` +
      'Install Node 24 (nodejs.org, your package manager, or `npx -p node@24 chartpilot …`), or use the chartpilot image.\n',
  );
  process.exit(3);
}
const BUNDLE = new URL('../dist/bundle/chartpilot.js', import.meta.url);
let cli;
try {
  cli = await import(BUNDLE.href);
} catch (err) {
  // Only the bundle's own absence: a module missing inside it, or any other error, is thrown as is.
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || err.url !== BUNDLE.href) throw err;
  process.stderr.write('chartpilot: dist/bundle/chartpilot.js is missing (npm run build makes it): running the unbundled dist/src, slower to start\n');
  cli = await import('../dist/src/cli/main.js');
}
process.exitCode = await cli.main(process.argv.slice(2));
