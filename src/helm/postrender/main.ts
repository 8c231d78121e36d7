/**
 * Entry point of chartpilot's helm post-renderer: helm pipes the rendered manifest to stdin and
 * uses stdout as the manifest to apply. The labels/annotations arrive as one JSON argument
 * (`--post-renderer-args`), or, if absent, in CHARTPILOT_POSTRENDER_SPEC.
 *
 * Helm 4 drops a post-renderer's stderr and only reports `plugin "…" exited with error`, so the
 * messages below mainly help someone running this script by hand.
 */
import { writeFileSync } from 'node:fs';
import { text } from 'node:stream/consumers';

import { injectMetadata, PostRenderRefusal } from './inject.js';
import { parsePostRenderSpec, serializeRefusal, SPEC_ENV } from './spec.js';
import { errorMessage } from '../../lib/errors.js';

async function main(): Promise<void> {
  const raw = process.argv[2] ?? process.env[SPEC_ENV];
  if (raw === undefined || raw === '') {
    throw new Error(`chartpilot post-renderer: no spec given (argument or ${SPEC_ENV})`);
  }
  const spec = parsePostRenderSpec(raw);
  const manifest = await text(process.stdin);
  try {
    process.stdout.write(injectMetadata(manifest, spec));
  } catch (err) {
    // helm drops our stderr: a refusal reaches the operator (and the CR's status) through this file.
    if (err instanceof PostRenderRefusal && spec.errorFile !== undefined) {
      writeFileSync(spec.errorFile, serializeRefusal({ message: err.message, unknownKinds: err.unknownKinds }), { mode: 0o600 });
    }
    throw err;
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`chartpilot post-renderer: ${errorMessage(err)}\n`);
  process.exitCode = 1;
});
