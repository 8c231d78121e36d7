/**
 * Bundle and catalog images (`npm run image:olm`): built with buildah FROM scratch and written to an
 * archive like the operator image; read back from the archive, the bundle image's files pass
 * bundle validation (operator-sdk's checks, by bundle-validate) and carry the bundle labels, and
 * the catalog image's /configs passes `opm validate`.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { execa } from 'execa';
import { buildImage, containerEnv, ensureContainerTools, writeArchive } from '../../devcluster/images.js';
import { bundleImageSpec, CATALOG_CONFIGS_LABEL, catalogImageSpec } from '../../devcluster/olm-images.js';
import { SAMPLE_CHART } from './fixtures.js';
import { assertBundleValid, generate, HUB_FLAGS, ICON_SVG, olmToolsBeforeAll } from './olm-tools.js';

const log = (line: string): void => { process.stderr.write(`[olm images] ${line}\n`); };

/** The files of image `ref` in an archive: its layers unpacked in order. */
async function unpack(archive: string, ref: string, into: string, env: Record<string, string>): Promise<{ labels: Record<string, string> }> {
  const dir = `${into}.image`;
  await execa('skopeo', ['copy', '--quiet', `oci-archive:${archive}:${ref}`, `dir:${dir}`], { env, extendEnv: false });
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { config: { digest: string }; layers: { digest: string }[] };
  mkdirSync(into, { recursive: true });
  for (const l of manifest.layers) await execa('tar', ['-xf', join(dir, l.digest.replace(/^sha256:/u, '')), '-C', into]);
  const config = JSON.parse(readFileSync(join(dir, manifest.config.digest.replace(/^sha256:/u, '')), 'utf8')) as { config?: { Labels?: Record<string, string> } };
  return { labels: config.config?.Labels ?? {} };
}

const olmTools = olmToolsBeforeAll(['opm']); // opm's build makes bundle-validate too

describe('OLM images', () => {
  it('builds the bundle and catalog images FROM scratch into an archive whose contents the OLM tools accept', { timeout: 10 * 60_000 }, async () => {
    const tools = olmTools();
    await ensureContainerTools(log);
    const env = await containerEnv();
    const dir = mkdtempSync(join(tmpdir(), 'chartpilot-olm-images-'));
    writeFileSync(join(dir, 'watches.yaml'), `- {group: demo.chartpilot.io, version: v1alpha1, kind: WebApp, chart: ${SAMPLE_CHART}}\n`);
    writeFileSync(join(dir, 'icon.svg'), ICON_SVG);
    await generate(dir, ['bundle', '--version', '0.1.0', '--offline', '--package', 'webapp-operator', '--icon', 'icon.svg', ...HUB_FLAGS, '--output-dir', 'out']);
    await generate(dir, ['catalog', 'out', '--output-dir', 'catalog']);

    const bundleSpec = await bundleImageSpec(join(dir, 'out'));
    assert.equal(bundleSpec.tag, 'localhost/webapp-operator-bundle:v0.1.0');
    const bundle = await buildImage(bundleSpec, env, log);
    const catalogSpec = catalogImageSpec(join(dir, 'catalog'));
    assert.equal(catalogSpec.tag, 'localhost/webapp-operator-catalog:latest');
    const catalog = await buildImage(catalogSpec, env, log);
    const archive = join(dir, 'olm.tar');
    await writeArchive([{ tag: bundle.tag, refName: 'webapp-operator-bundle:v0.1.0' }, { tag: catalog.tag, refName: 'webapp-operator-catalog:latest' }], archive, env, log);

    const bundleFiles = join(dir, 'bundle-image');
    const b = await unpack(archive, 'webapp-operator-bundle:v0.1.0', bundleFiles, env);
    assert.equal(b.labels['operators.operatorframework.io.bundle.mediatype.v1'], 'registry+v1');
    assert.equal(b.labels['operators.operatorframework.io.bundle.package.v1'], 'webapp-operator');
    await assertBundleValid(tools, bundleFiles);

    const catalogFiles = join(dir, 'catalog-image');
    const c = await unpack(archive, 'webapp-operator-catalog:latest', catalogFiles, env);
    assert.equal(c.labels[CATALOG_CONFIGS_LABEL], '/configs');
    const opm = await execa(tools.opm, ['validate', join(catalogFiles, 'configs')], { reject: false, all: true });
    assert.equal(opm.exitCode, 0, opm.all);
  });
});
