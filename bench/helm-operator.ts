/**
 * operator-sdk's helm-operator, the reference contender: built once from the Go module proxy and
 * cached by version, like the control-plane binaries (outside the repository).
 *
 * `go install …/helm-operator@v1.42.0` cannot work against the proxy this machine uses: it answers
 * 403 for the module's `.mod` and version list, but serves the module `.zip`. The zip holds the
 * whole module with its go.mod and go.sum, so we fetch it, unpack it and `go build` the command
 * inside it; every dependency still comes from the proxy and is checked against the module's go.sum.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir } from '../devcluster/paths.js';
import { errorMessage } from '../src/lib/errors.js';

export const HELM_OPERATOR_VERSION = 'v1.42.0';
const MODULE = 'github.com/operator-framework/operator-sdk';
const COMMAND_DIR = './cmd/helm-operator';

export function helmOperatorDir(): string {
  return join(cacheDir(), `helm-operator-${HELM_OPERATOR_VERSION}`);
}

export function cachedHelmOperator(): string | undefined {
  const bin = join(helmOperatorDir(), 'helm-operator');
  return existsSync(bin) ? bin : undefined;
}

export type BuildResult = { ok: true; bin: string; seconds: number } | { ok: false; error: string; seconds: number };

/** The first proxy of GOPROXY (`direct`/`off` entries cannot serve a zip over HTTP). */
export function moduleProxy(): string {
  const first = (process.env.GOPROXY ?? '').split(/[,|]/).find((p) => p.startsWith('http'));
  return (first ?? 'https://proxy.golang.org').replace(/\/+$/, '');
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (chunk: Buffer): void => { output = (output + chunk.toString('utf8')).slice(-4000); };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', (err) => { resolve({ code: null, output: `cannot run ${cmd}: ${err.message}` }); });
    child.on('close', (code) => { resolve({ code, output: output.trim() }); });
  });
}

/**
 * Builds the binary; the promise settles when the build ends. The caller awaits it before measuring
 * anything: a Go build saturates both cores and would distort every figure taken while it runs.
 */
export async function buildHelmOperator(log: (line: string) => void): Promise<BuildResult> {
  const started = Date.now();
  const seconds = (): number => (Date.now() - started) / 1000;
  const fail = (error: string): BuildResult => ({ ok: false, error, seconds: seconds() });
  const outDir = helmOperatorDir();
  mkdirSync(outDir, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'helm-operator-src-'));
  try {
    const url = `${moduleProxy()}/${MODULE}/@v/${HELM_OPERATOR_VERSION}.zip`;
    log(`fetching ${url}`);
    const res = await fetch(url);
    if (!res.ok) return fail(`GET ${url}: ${res.status} ${(await res.text()).trim()}`);
    const zip = join(work, 'module.zip');
    writeFileSync(zip, Buffer.from(await res.arrayBuffer()));
    const unzip = await run('unzip', ['-q', zip, '-d', work], work, process.env);
    if (unzip.code !== 0) return fail(`unzip failed (install it with apt-get install unzip): ${unzip.output}`);
    const moduleDir = join(work, `${MODULE}@${HELM_OPERATOR_VERSION}`);
    log(`building helm-operator ${HELM_OPERATOR_VERSION} into ${outDir} (may take 10+ minutes on 2 cores)`);
    const env = { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod -buildvcs=false' };
    const build = await run('go', ['build', '-o', join(outDir, 'helm-operator'), COMMAND_DIR], moduleDir, env);
    const bin = cachedHelmOperator();
    if (build.code === 0 && bin !== undefined) return { ok: true, bin, seconds: seconds() };
    return fail(`go build exited with ${String(build.code)}: ${build.output}`);
  } catch (err) {
    return fail(errorMessage(err));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
