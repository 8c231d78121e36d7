// OLM bundle and catalog images (docs/operations/olm.md), built with buildah like the
// operator image (images.ts): both FROM scratch, holding only what OLM reads.
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { loadBundle } from '../src/generate/catalog.js';
import type { BuildSpec } from './images.js';

/** What an OLM catalog image declares: where its file-based catalog is (OLM v0 and v1 read it). */
export const CATALOG_CONFIGS_LABEL = 'operators.operatorframework.io.index.configs.v1';

/**
 * The bundle image of a directory `chartpilot generate bundle --output-dir <dir>` wrote
 * (bundle.Dockerfile and bundle/), tagged localhost/<package>-bundle:v<version>.
 */
export async function bundleImageSpec(dir: string): Promise<BuildSpec & { packageName: string; version: string }> {
  const bundle = await loadBundle(join(dir, 'bundle'));
  const spec = bundle.csv['spec'];
  const version = typeof spec === 'object' && spec !== null && typeof (spec as Record<string, unknown>)['version'] === 'string' ? String((spec as Record<string, unknown>)['version']) : '';
  return {
    tag: `localhost/${bundle.packageName}-bundle:v${version}`,
    context: dir,
    dockerfile: 'bundle.Dockerfile',
    inputs: ['bundle'],
    packageName: bundle.packageName,
    version,
  };
}

/**
 * The catalog image of a directory `chartpilot generate catalog --output-dir <dir>` wrote:
 * FROM scratch, the catalog at /configs, and the label that says so. Its Dockerfile is written
 * next to the directory (<dir>.Dockerfile, as `opm generate dockerfile` names it).
 */
export function catalogImageSpec(catalogDir: string, tag?: string): BuildSpec {
  const packages = readdirSync(catalogDir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  const name = basename(catalogDir);
  const dockerfile = join(dirname(catalogDir), `${name}.Dockerfile`);
  mkdirSync(dirname(dockerfile), { recursive: true });
  writeFileSync(
    dockerfile,
    [
      '# A file-based OLM catalog (chartpilot generate catalog); nothing but the catalog: OLM serves it.',
      'FROM scratch',
      `ADD ${name} /configs`,
      `LABEL ${CATALOG_CONFIGS_LABEL}=/configs`,
      '',
    ].join('\n'),
  );
  return {
    tag: tag ?? `localhost/${packages.length === 1 ? (packages[0] ?? name) : name}-catalog:latest`,
    context: dirname(catalogDir),
    dockerfile,
    inputs: [name],
  };
}
