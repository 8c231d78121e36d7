/** The image tooling's pure parts: missing tools fail by package name, content keys follow content. */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CONTAINERS_CONF, contentKey, ensureContainerTools, hostCaBundle } from '../../../devcluster/images.js';

const dir = mkdtempSync(join(tmpdir(), 'chartpilot-images-unit-'));
after(() => { rmSync(dir, { recursive: true, force: true }); });

describe('ensureContainerTools', () => {
  it('fails naming every missing Debian package when it may not install them', async () => {
    const empty = join(dir, 'empty-bin');
    mkdirSync(empty);
    await assert.rejects(ensureContainerTools(() => undefined, { path: empty, install: false }), (err: Error) => {
      assert.match(err.message, /^missing Debian packages buildah, podman, runc, mmdebstrap, skopeo: /);
      assert.match(err.message, /apt-get install -y --no-install-recommends buildah podman runc mmdebstrap skopeo\)$/);
      return true;
    });
  });

  it('names only what is missing', async () => {
    const some = join(dir, 'some-bin');
    mkdirSync(some);
    for (const tool of ['buildah', 'podman', 'runc', 'skopeo']) {
      writeFileSync(join(some, tool), '#!/bin/sh\n');
      chmodSync(join(some, tool), 0o755);
    }
    await assert.rejects(ensureContainerTools(() => undefined, { path: some, install: false }), /^Error: missing Debian package mmdebstrap: /);
  });
});

describe('containers.conf', () => {
  it('sets what podman needs on hosts without systemd cgroups or a raisable RLIMIT_NOFILE', () => {
    assert.match(CONTAINERS_CONF, /^runtime = "runc"$/mu);
    assert.match(CONTAINERS_CONF, /^cgroup_manager = "cgroupfs"$/mu);
    assert.match(CONTAINERS_CONF, /^default_ulimits = \["nofile=4096:4096", "nproc=4096:4096"\]$/mu);
  });
});

describe('hostCaBundle', () => {
  it('prefers NODE_EXTRA_CA_CERTS, skips missing or empty files', () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, '-----BEGIN CERTIFICATE-----\n');
    const emptyCa = join(dir, 'empty.pem');
    writeFileSync(emptyCa, '');
    assert.equal(hostCaBundle({ NODE_EXTRA_CA_CERTS: ca }), ca);
    assert.equal(hostCaBundle({ NODE_EXTRA_CA_CERTS: join(dir, 'absent.pem'), SSL_CERT_FILE: ca }), ca);
    assert.notEqual(hostCaBundle({ NODE_EXTRA_CA_CERTS: emptyCa, SSL_CERT_FILE: ca }), emptyCa);
  });
});

describe('contentKey', () => {
  it('changes with the Dockerfile, an input file, its exec bit or a build arg, and nothing else', async () => {
    const ctx = join(dir, 'ctx');
    mkdirSync(join(ctx, 'charts/c'), { recursive: true });
    writeFileSync(join(ctx, 'Dockerfile'), 'FROM scratch\n');
    writeFileSync(join(ctx, 'watches.yaml'), '[]\n');
    writeFileSync(join(ctx, 'charts/c/Chart.yaml'), 'name: c\n');
    writeFileSync(join(ctx, 'README.md'), 'not an input\n');
    const spec = { tag: 'localhost/x:1', context: ctx, dockerfile: 'Dockerfile', inputs: ['watches.yaml', 'charts'] };
    const key = (s = spec): Promise<string> => contentKey(s, {});
    const k0 = await key();
    assert.equal(await key(), k0, 'stable');
    writeFileSync(join(ctx, 'README.md'), 'changed, still not an input\n');
    assert.equal(await key(), k0, 'files outside the inputs do not count');
    writeFileSync(join(ctx, 'charts/c/Chart.yaml'), 'name: c2\n');
    const k1 = await key();
    assert.notEqual(k1, k0, 'an input file changed');
    chmodSync(join(ctx, 'charts/c/Chart.yaml'), 0o755);
    const k2 = await key();
    assert.notEqual(k2, k1, 'an exec bit changed');
    writeFileSync(join(ctx, 'Dockerfile'), 'FROM scratch\nLABEL a=b\n');
    const k3 = await key();
    assert.notEqual(k3, k2, 'the Dockerfile changed');
    assert.notEqual(await key({ ...spec, buildArgs: { A: '1' } } as typeof spec), k3, 'a build arg');
  });
});
