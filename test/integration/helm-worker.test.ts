// The warm helm's own Go suite (helm-worker/*_test.go: call after call through one worker, each
// result compared with a fresh helm process's) run against this run's control plane, so that its
// cluster table runs wherever the integration suite does.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { execa } from 'execa';
import { repoRoot } from '../../devcluster/paths.js';
import { testCluster } from './harness.js';

const c = await testCluster();

it('helm-worker: go test ./... passes with the cluster table run, not skipped', { timeout: 20 * 60_000 }, async () => {
  const go = await execa('go', ['version'], { reject: false });
  assert.equal(go.exitCode, 0, 'go is not on PATH: the warm helm (helm-worker/) is tested with `go test`; install Go >= 1.26');
  // TestMain builds the binary from these sources (the bin dir's link may be another checkout's).
  // The flags and CGO setting of provision.sh's build (GO_BUILD_FLAGS; TestMain's too), so every
  // helm and Kubernetes package comes from the build cache: without -trimpath all of them compiled
  // again (267 s of a cold CI run), and so would a different -gcflags. go test's vet is off for the
  // same reason: it vets every dependency for facts (~140 CPU-s cold); the worker's own code is
  // small and covered by these tests.
  const r = await execa('go', ['test', '-trimpath', '-gcflags=all=-dwarf=false', '-vet=off', '-count=1', '-v', './...'], {
    cwd: join(repoRoot(), 'helm-worker'),
    env: { KUBECONFIG: c.kubeconfig, GOTOOLCHAIN: 'local', CGO_ENABLED: '0' },
    reject: false,
    all: true,
  });
  assert.equal(r.exitCode, 0, `go test failed:\n${r.all}`);
  assert.match(r.all, /^--- PASS: TestLeakageCluster/m, `the cluster table did not run:\n${r.all}`);
  assert.match(r.all, /^--- PASS: TestLeakageOffline/m);
  assert.match(r.all, /^--- PASS: TestCancel/m, `the cancel tests did not run:\n${r.all}`);
  assert.match(r.all, /^--- PASS: TestEngineClusterConfinedWire/m, `the engine's confinement against the cluster did not run:\n${r.all}`);
});
