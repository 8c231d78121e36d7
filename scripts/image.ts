// `npm run image`: builds chartpilot:<version> from the Dockerfile with buildah, and the sample
// operator chartpilot-webapp:<version> from deploy/webapp.Dockerfile, then writes both to one
// archive for podman load / docker load / skopeo copy; and chartpilot-ansible:<version> (the
// same operator plus the Ansible runtime, Dockerfile.ansible) to an archive of its own. Bases come from Debian and npm
// (devcluster/images.ts); everything is cached by content, so an unchanged tree takes seconds.
//
//   npm run image                       build, then write dist/image/chartpilot-<version>.tar
//                                       and dist/image/chartpilot-ansible-<version>.tar
//   npm run image -- --no-archive       build only (the images stay in podman's storage)
//   npm run image -- --out <file>       the archive's path
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  applicationSpec,
  buildAnsibleImage,
  buildImage,
  chartpilotSpec,
  containerEnv,
  ensureBaseImages,
  ensureContainerTools,
  packageVersion,
  placeWarmHelm,
  writeArchive,
  type ArchivedImage,
  type Built,
} from '../devcluster/images.js';
import { repoRoot } from '../devcluster/paths.js';

const log = (line: string): void => { process.stdout.write(`${line}\n`); };
const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;

function builtLine(b: Built): string {
  return `${b.tag}: ${b.built ? 'built' : 'unchanged (same content key)'} in ${(b.ms / 1000).toFixed(1)} s, id ${b.id.slice(0, 12)}`;
}

function layerTable(image: ArchivedImage): string[] {
  const lines = [`  ${'uncompressed'.padStart(12)}  ${'compressed'.padStart(10)}  layer`];
  let u = 0;
  let c = 0;
  for (const l of image.layers) {
    u += l.uncompressed;
    c += l.compressed;
    const what = l.createdBy
      .replace(/^\/bin\/sh -c (#\(nop\) )?/u, '')
      .replace(/^(COPY|ADD) (file|dir):[0-9a-f]+ in /u, '$1 → ')
      .replace(/\s+/gu, ' ');
    lines.push(`  ${mb(l.uncompressed).padStart(12)}  ${mb(l.compressed).padStart(10)}  ${what.length > 80 ? `${what.slice(0, 77)}...` : what}`);
  }
  lines.push(`  ${mb(u).padStart(12)}  ${mb(c).padStart(10)}  total (${String(image.layers.length)} layers)`);
  return lines;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { 'no-archive': { type: 'boolean', default: false }, out: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
  });
  if (values.help) {
    log('usage: npm run image [-- --no-archive] [-- --out <file>]');
    return 0;
  }
  const version = packageVersion();
  const started = Date.now();
  const elapsed = (): string => `${((Date.now() - started) / 1000).toFixed(1)} s`;

  log('image: container tools (buildah, podman, runc, mmdebstrap, skopeo)');
  await ensureContainerTools(log);
  const env = await containerEnv();

  log('image: chartpilot-helm, the image\'s helm (built on this host if the cache lacks it)');
  log(`image: ${await placeWarmHelm(log)}`);

  log('image: base images');
  const bases = await ensureBaseImages(env, log);

  log(`image: chartpilot:${version} from Dockerfile`);
  const base = await buildImage(chartpilotSpec(bases), env, log);
  log(`image: ${builtLine(base)}`);

  log(`image: chartpilot-webapp:${version} from deploy/webapp.Dockerfile (the sample operator deploy/ runs)`);
  const webapp = await buildImage(
    { ...applicationSpec(`localhost/chartpilot-webapp:${version}`, repoRoot(), base.tag, 'deploy/webapp.Dockerfile'), buildArgs: { BASE_IMAGE: base.tag } },
    env,
    log,
  );
  log(`image: ${builtLine(webapp)}`);

  log(`image: chartpilot-ansible:${version} from Dockerfile.ansible (chartpilot on Debian with Python, plus the Ansible runtime)`);
  const ansible = await buildAnsibleImage(bases, env, log);
  log(`image: ${builtLine(ansible.base)}`);
  log(`image: ${builtLine(ansible.image)}`);

  if (values['no-archive']) {
    log(`image: done in ${elapsed()}`);
    return 0;
  }
  const file = resolve(values.out ?? `${repoRoot()}/dist/image/chartpilot-${version}.tar`);
  log(`image: archive ${file}`);
  const archive = await writeArchive(
    [{ tag: base.tag, refName: `chartpilot:${version}` }, { tag: webapp.tag, refName: `chartpilot-webapp:${version}` }],
    file,
    env,
    log,
  );
  log(`image: ${archive.written ? 'wrote' : 'unchanged:'} ${file} (${mb(archive.bytes)}, both images, shared layers once)`);
  for (const image of archive.images) {
    log(`image: ${image.refName} layers`);
    for (const line of layerTable(image)) log(line);
  }
  // The Ansible image in an archive of its own: it shares no layer with the two above (another
  // Debian base), and those who run only charts need not download it.
  const ansibleFile = resolve(values.out === undefined ? `${repoRoot()}/dist/image/chartpilot-ansible-${version}.tar` : `${values.out.replace(/\.tar$/u, '')}-ansible.tar`);
  log(`image: archive ${ansibleFile}`);
  const ansibleArchive = await writeArchive([{ tag: ansible.image.tag, refName: `chartpilot-ansible:${version}` }], ansibleFile, env, log);
  log(`image: ${ansibleArchive.written ? 'wrote' : 'unchanged:'} ${ansibleFile} (${mb(ansibleArchive.bytes)})`);
  for (const image of ansibleArchive.images) {
    log(`image: ${image.refName} layers`);
    for (const line of layerTable(image)) log(line);
  }
  log(`image: done in ${elapsed()}`);
  log(`
load it:  podman load -i ${file}      (or: docker load -i ${file})
          podman load -i ${ansibleFile}      (chartpilot-ansible, for Ansible roles)
run it:   podman run --rm localhost/chartpilot:${version} --help
push it:  skopeo copy oci-archive:${file}:chartpilot:${version} docker://<registry>/chartpilot:${version}
podman here needs runc, cgroupfs and explicit ulimits: CONTAINERS_CONF=${env.CONTAINERS_CONF ?? ''} podman run ...`);
  return 0;
}

try {
  process.exitCode = await main();
} catch (err) {
  process.stderr.write(`image: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
