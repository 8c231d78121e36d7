// The second half of `npm run build` (after tsc): dist/bundle/, what bin/chartpilot.js and the
// image run (scripts/bundler.ts says what it is and why). Fails, naming the module, when the
// bundle would need something it cannot carry.
import { fileURLToPath } from 'node:url';
import { buildBundle } from './bundler.js';
import { errorMessage } from '../src/lib/errors.js';

try {
  const started = Date.now();
  // This file runs as <root>/dist/scripts/bundle.js (also in the image's build stage, which has no devcluster/).
  const { metafiles, twoByte } = await buildBundle(fileURLToPath(new URL('../..', import.meta.url)));
  const files = metafiles.flatMap((m) => Object.entries(m.outputs)).filter(([file]) => file.endsWith('.js'));
  const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
  process.stderr.write(`bundle: ${String(files.length)} files, ${mb(files.reduce((n, [, o]) => n + o.bytes, 0))} in dist/bundle/ (${String(Date.now() - started)} ms)\n`);
  if (twoByte.length > 0) process.stderr.write(`bundle: kept as written, non-ASCII outside comments (held at two bytes a character): ${twoByte.join(', ')}\n`);
} catch (err) {
  process.stderr.write(`bundle: ${errorMessage(err)}\n`);
  process.exitCode = 1;
}
