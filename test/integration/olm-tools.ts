// The Operator Framework's tools for the OLM tests (built and cached by devcluster/provision.sh
// olm-tools), bundle validation as those tests run it, and `chartpilot generate` likewise.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { before } from 'node:test';
import { execa } from 'execa';
import { provision } from '../../devcluster/provision.js';
import { BIN } from './fixtures.js';

/** Everything OperatorHub wants that the test charts' Chart.yaml does not give. */
export const HUB_FLAGS = ['--provider', 'Example Inc', '--maintainer', 'Jane Doe <jane@example.com>', '--keyword', 'web'];
/** A minimal SVG: OperatorHub's check refuses a bundle without an icon. */
export const ICON_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"><rect width="1" height="1"/></svg>\n';

export interface OlmTools {
  /** devcluster/olm-tools/cmd/bundle-validate: `operator-sdk bundle validate`'s checks on a directory. */
  readonly bundleValidate: string;
  readonly opm: string;
  /** operator-sdk, only when already built (`provision.sh operator-sdk`): CI never builds it. */
  readonly operatorSdk: string | undefined;
  /** The bin dir: also olm, olm-catalog and olm-crds-dir (prints the directory of OLM's CRDs). */
  readonly bin: string;
}

/**
 * Provisions the tools (cached: well under a second) and names them; `components` narrows what a
 * test needs (provision.sh names: opm, bundle-validate, olm; one build makes opm and bundle-validate).
 */
export async function olmTools(components: readonly string[] = ['olm-tools']): Promise<OlmTools> {
  const bin = await provision({
    components,
    log: (line) => { if (!/: cached$|^provisioned in|^\//u.test(line)) process.stderr.write(`[olm tools] ${line}\n`); },
  });
  const operatorSdk = join(bin, 'operator-sdk');
  return { bundleValidate: join(bin, 'bundle-validate'), opm: join(bin, 'opm'), operatorSdk: existsSync(operatorSdk) ? operatorSdk : undefined, bin };
}

export interface Validation {
  readonly exitCode: number | undefined;
  /** stdout and stderr: one logrus line per finding (`level=warning`, `level=error`). */
  readonly output: string;
}

/**
 * `bundle-validate <bundleDir> [extra]`: exit 1 on any error, as `operator-sdk bundle validate`.
 * `extra` e.g. `['--select-optional', 'suite=operatorframework']` (OperatorHub's checks).
 */
export async function bundleValidate(tools: OlmTools, bundleDir: string, extra: readonly string[] = []): Promise<Validation> {
  const r = await execa(tools.bundleValidate, [bundleDir, ...extra], { reject: false, all: true });
  return { exitCode: r.exitCode, output: r.all };
}

/** Like bundleValidate, but fails the test unless the bundle passes with no error line. */
export async function assertBundleValid(tools: OlmTools, bundleDir: string, extra: readonly string[] = []): Promise<string> {
  const r = await bundleValidate(tools, bundleDir, extra);
  assert.equal(r.exitCode, 0, `bundle-validate ${bundleDir} ${extra.join(' ')} failed:\n${r.output}`);
  assert.doesNotMatch(r.output, /level=error/u, r.output);
  return r.output;
}

/**
 * How long a test file may wait for the tools: on a cold machine .ci/run builds them while the
 * rest of the suite runs (test/run-tests.js starts these files last), and that build may still be
 * going. Below test/run-tests.js's 20-minute per-file watchdog, so a build that never ends fails here.
 */
export const TOOLS_BUILD_WAIT_MS = 18 * 60_000;

/**
 * Call at the top level of a test file (not inside describe): provisions the tools in a file-level
 * before hook whose own timeout covers waiting for their build, so every test keeps the runner's
 * 5-minute timeout for its own work. Returns the tools, for use inside the tests.
 */
export function olmToolsBeforeAll(components?: readonly string[]): () => OlmTools {
  let tools: OlmTools | undefined;
  before(async () => { tools = await olmTools(components); }, { timeout: TOOLS_BUILD_WAIT_MS });
  return () => {
    assert.ok(tools !== undefined, 'the OLM tools are provisioned by the file\'s before hook');
    return tools;
  };
}

/** helm for the generators' chart rendering: the test run's, when it has one. */
export function helmEnv(): Record<string, string> {
  const bin = process.env['CHARTPILOT_TEST_BIN'];
  return bin === undefined ? {} : { HELM_BIN: join(bin, 'helm') };
}

/** Runs `chartpilot generate <args>` in `dir`; fails the test on a non-zero exit. */
export async function generate(dir: string, args: readonly string[]): Promise<{ stderr: string }> {
  const r = await execa(process.execPath, [BIN, 'generate', ...args], { cwd: dir, reject: false, env: helmEnv() });
  assert.equal(r.exitCode, 0, `chartpilot generate ${args.join(' ')} failed:\n${r.stderr}`);
  return { stderr: r.stderr };
}
