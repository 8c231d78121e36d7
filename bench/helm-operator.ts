/**
 * operator-sdk's helm-operator, the reference contender: built once from the Go module proxy with
 * `go install` and cached by version, like the control-plane binaries (outside the repository).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../test/cluster/paths.js';

export const HELM_OPERATOR_VERSION = 'v1.42.0';
const MODULE_PACKAGE = 'github.com/operator-framework/operator-sdk/cmd/helm-operator';

export function helmOperatorDir(): string {
  return join(cacheDir(), `helm-operator-${HELM_OPERATOR_VERSION}`);
}

export function cachedHelmOperator(): string | undefined {
  const bin = join(helmOperatorDir(), 'helm-operator');
  return existsSync(bin) ? bin : undefined;
}

export type BuildResult = { ok: true; bin: string; seconds: number } | { ok: false; error: string; seconds: number };

/**
 * Builds the binary in the background; the promise settles when `go install` exits. The caller
 * awaits it before measuring anything: a Go build saturates both cores and would distort every
 * figure taken while it runs (and its CPU would land in the bench's own cutime when reaped).
 */
export function buildHelmOperator(log: (line: string) => void): Promise<BuildResult> {
  const started = Date.now();
  const seconds = (): number => (Date.now() - started) / 1000;
  const gobin = helmOperatorDir();
  mkdirSync(gobin, { recursive: true });
  log(`building helm-operator ${HELM_OPERATOR_VERSION} with go install into ${gobin} (may take 10+ minutes on 2 cores)`);
  return new Promise((resolve) => {
    let output = '';
    const child = spawn('go', ['install', `${MODULE_PACKAGE}@${HELM_OPERATOR_VERSION}`], {
      env: { ...process.env, GOBIN: gobin, GOTOOLCHAIN: 'local' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const collect = (chunk: Buffer): void => { output = (output + chunk.toString('utf8')).slice(-4000); };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', (err) => { resolve({ ok: false, error: `cannot run go: ${err.message}`, seconds: seconds() }); });
    child.on('close', (code) => {
      const bin = cachedHelmOperator();
      if (code === 0 && bin !== undefined) resolve({ ok: true, bin, seconds: seconds() });
      else resolve({ ok: false, error: `go install exited with ${String(code)}: ${output.trim()}`, seconds: seconds() });
    });
  });
}
