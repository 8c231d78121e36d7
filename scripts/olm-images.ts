// `npm run image:olm -- <bundle output dir>... [--catalog <dir>] [--out <file>]`: the OLM bundle
// image of each directory `chartpilot generate bundle --output-dir` wrote, and the catalog image of
// what `chartpilot generate catalog` wrote, built with buildah (FROM scratch) and written to one
// archive like `npm run image` (podman load / docker load / skopeo copy oci-archive:…).
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildImage, containerEnv, ensureContainerTools, writeArchive, type Built } from '../devcluster/images.js';
import { bundleImageSpec, catalogImageSpec } from '../devcluster/olm-images.js';
import { repoRoot } from '../devcluster/paths.js';

const log = (line: string): void => { process.stdout.write(`${line}\n`); };

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { catalog: { type: 'string' }, 'catalog-tag': { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
    allowPositionals: true,
  });
  if (values.help || (positionals.length === 0 && values.catalog === undefined)) {
    log('usage: npm run image:olm -- <bundle output dir>... [--catalog <catalog dir>] [--catalog-tag <tag>] [--out <file>]');
    return values.help ? 0 : 2;
  }
  await ensureContainerTools(log);
  const env = await containerEnv();
  const built: { image: Built; refName: string }[] = [];
  for (const dir of positionals) {
    const spec = await bundleImageSpec(resolve(dir));
    const image = await buildImage(spec, env, log);
    log(`image:olm: ${image.tag} ${image.built ? 'built' : 'unchanged'} in ${(image.ms / 1000).toFixed(1)} s`);
    built.push({ image, refName: spec.tag.replace(/^localhost\//u, '') });
  }
  if (values.catalog !== undefined) {
    const spec = catalogImageSpec(resolve(values.catalog), values['catalog-tag']);
    const image = await buildImage(spec, env, log);
    log(`image:olm: ${image.tag} ${image.built ? 'built' : 'unchanged'} in ${(image.ms / 1000).toFixed(1)} s`);
    built.push({ image, refName: spec.tag.replace(/^localhost\//u, '') });
  }
  const file = resolve(values.out ?? `${repoRoot()}/dist/image/olm.tar`);
  const archive = await writeArchive(built.map((b) => ({ tag: b.image.tag, refName: b.refName })), file, env, log);
  log(`image:olm: ${archive.written ? 'wrote' : 'unchanged:'} ${file} (${(archive.bytes / 1e6).toFixed(2)} MB): ${built.map((b) => b.refName).join(', ')}`);
  log(`push:  skopeo copy oci-archive:${file}:<name:tag> docker://<registry>/<name:tag>`);
  return 0;
}

try {
  process.exitCode = await main();
} catch (err) {
  process.stderr.write(`image:olm: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
