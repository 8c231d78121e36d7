// Chart registries for tests: a real OCI registry (devcluster/registry.ts) and a real HTTPS Helm
// repository (devcluster/chart-repo.ts), each stopped with the test, and the means to publish a
// chart version to them the way a chart's author would: `helm package`, then `helm push` or
// `helm repo index`. Credentials for the operator go into Secrets; the publisher logs in with a
// registry config of its own, so the operator never finds the publisher's login by accident.
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, type TestContext } from 'node:test';
import { startChartRepo, type ChartRepo } from '../../devcluster/chart-repo.js';
import { provision } from '../../devcluster/provision.js';
import { startRegistry, type Registry } from '../../devcluster/registry.js';
import type { TestCluster } from './harness.js';

export const REGISTRY_USER = 'chartpilot';

/**
 * Call at the top level of a test file that starts registries: provisions the registry binary in
 * a file-level before hook, whose own timeout covers waiting for its build — on a cold machine
 * .ci/run builds it in the background while the rest of the suite runs (test/run-tests.js starts
 * files importing this module last) — so every test keeps the runner's 5-minute timeout for its work.
 */
export function registryBeforeAll(): void {
  before(async () => { await provision({ components: ['registry'] }); }, { timeout: 18 * 60_000 });
}

export interface TestRegistry {
  readonly registry: Registry;
  readonly password: string;
  /** `oci://<host>/charts`: where charts are pushed (a chart `webapp` is then `<base>/webapp`). */
  readonly base: string;
  /** Packages `chartDir` as `version` (with `values` merged into values.yaml text) and pushes it; resolves with the manifest digest helm printed. */
  push(chartDir: string, version: string, appendValues?: string): Promise<string>;
  /** A dockerconfigjson Secret for this registry (with its CA) in `namespace`; `password` to give a wrong one. */
  secret(namespace: string, name: string, password?: string): Promise<void>;
}

export interface TestRepo {
  readonly repo: ChartRepo;
  readonly password: string;
  /** Packages `chartDir` as `version` into the repository and re-indexes it; `truncate` cuts the archive in half (a broken upload). */
  publish(chartDir: string, version: string, opts?: { appendValues?: string; truncate?: boolean }): Promise<void>;
  /** A basic-auth Secret for this repository (with its CA) in `namespace`. */
  secret(namespace: string, name: string): Promise<void>;
}

function workDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => { rmSync(dir, { recursive: true, force: true }); });
  return dir;
}

/** A copy of chartDir whose Chart.yaml says `version`, with `appendValues` added to values.yaml, packaged into `outDir`. */
async function packageAs(c: TestCluster, chartDir: string, version: string, outDir: string, appendValues?: string): Promise<string> {
  const work = mkdtempSync(join(tmpdir(), 'chart-src-'));
  try {
    const name = /^name:\s*(\S+)/mu.exec(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8'))?.[1] ?? 'chart';
    const dir = join(work, name);
    cpSync(chartDir, dir, { recursive: true });
    const chartYaml = readFileSync(join(dir, 'Chart.yaml'), 'utf8').replace(/^version:.*$/mu, `version: ${version}`);
    writeFileSync(join(dir, 'Chart.yaml'), chartYaml);
    if (appendValues !== undefined) writeFileSync(join(dir, 'values.yaml'), `${readFileSync(join(dir, 'values.yaml'), 'utf8')}\n${appendValues}\n`);
    mkdirSync(outDir, { recursive: true });
    await c.helm(['package', dir, '--destination', outDir]);
    return join(outDir, `${name}-${version}.tgz`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function b64(text: string | Buffer): string {
  return Buffer.from(text).toString('base64');
}

export async function testRegistry(t: TestContext, c: TestCluster): Promise<TestRegistry> {
  const dir = workDir(t, 'chartpilot-registry-');
  const password = randomBytes(9).toString('hex');
  const registry = await startRegistry({ dir: join(dir, 'registry'), binDir: c.binDir, users: { [REGISTRY_USER]: password } });
  t.after(() => registry.destroy());
  // The publisher's own login, never the operator's.
  const env = { ...c.env, HELM_REGISTRY_CONFIG: join(dir, 'publisher-registry.json') };
  const { execa } = await import('execa');
  const login = await execa(c.helmBin, ['registry', 'login', registry.host, '--username', REGISTRY_USER, '--password-stdin', '--ca-file', registry.caFile], { env, input: password, reject: false });
  if (login.exitCode !== 0) throw new Error(`helm registry login failed: ${login.stderr}`);
  const base = `oci://${registry.host}/charts`;
  return {
    registry,
    password,
    base,
    push: async (chartDir, version, appendValues) => {
      const tgz = await packageAs(c, chartDir, version, join(dir, 'packages'), appendValues);
      const r = await execa(c.helmBin, ['push', tgz, base, '--ca-file', registry.caFile], { env, reject: false, all: true });
      if (r.exitCode !== 0) throw new Error(`helm push failed: ${r.all}`);
      const digest = /Digest:\s*(sha256:[a-f0-9]{64})/u.exec(r.all)?.[1];
      if (digest === undefined) throw new Error(`helm push printed no digest: ${r.all}`);
      return digest;
    },
    secret: async (namespace, name, pw = password) => {
      const config = { auths: { [registry.host]: { auth: b64(`${REGISTRY_USER}:${pw}`) } } };
      const secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/dockerconfigjson',
        metadata: { name, namespace },
        data: { '.dockerconfigjson': b64(JSON.stringify(config)), 'ca.crt': b64(readFileSync(registry.caFile)) },
      };
      await c.kubectl(['apply', '-f', '-'], { input: JSON.stringify(secret) });
    },
  };
}

export async function testRepo(t: TestContext, c: TestCluster): Promise<TestRepo> {
  const dir = workDir(t, 'chartpilot-repo-');
  const root = join(dir, 'root');
  mkdirSync(root);
  const password = randomBytes(9).toString('hex');
  const repo = await startChartRepo({ root, pkiDir: join(dir, 'pki'), users: { [REGISTRY_USER]: password } });
  t.after(() => repo.stop());
  return {
    repo,
    password,
    publish: async (chartDir, version, opts = {}) => {
      const tgz = await packageAs(c, chartDir, version, root, opts.appendValues);
      await c.helm(['repo', 'index', root]);
      if (!readdirSync(root).includes('index.yaml')) throw new Error('helm repo index wrote no index.yaml');
      if (opts.truncate === true) {
        // helm repo index skips an archive it cannot load, so the upload breaks after indexing,
        // and the index is made to list the broken file's digest (as an uploader that hashes
        // what it received would): only loading the archive can tell.
        const bytes = readFileSync(tgz);
        const cut = bytes.subarray(0, Math.floor(bytes.length / 2));
        writeFileSync(tgz, cut);
        const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
        const index = join(root, 'index.yaml');
        writeFileSync(index, readFileSync(index, 'utf8').replace(sha(bytes), sha(cut)));
      }
    },
    secret: async (namespace, name) => {
      const secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/basic-auth',
        metadata: { name, namespace },
        data: { username: b64(REGISTRY_USER), password: b64(password), 'ca.crt': b64(readFileSync(repo.caFile)) },
      };
      await c.kubectl(['apply', '-f', '-'], { input: JSON.stringify(secret) });
    },
  };
}
