// Runs provision.sh (the single place that knows how to build each binary) from TypeScript.
import { join } from 'node:path';
import { execa } from 'execa';
import { repoRoot } from './paths.js';

export interface ProvisionOptions {
  /** Receives every output line (timings, build progress); default: stderr. */
  log?: (line: string) => void;
  /** provision.sh's components (e.g. ['olm-tools']); default: what the control plane needs. */
  components?: readonly string[];
}

/** Builds or unpacks whatever is missing from the cache and returns the bin dir of symlinks. */
export async function provision(opts: ProvisionOptions = {}): Promise<string> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const script = join(repoRoot(), 'devcluster', 'provision.sh');
  const lines: string[] = [];
  // Streamed line by line: a cold build takes many minutes and must show that it is alive.
  const proc = execa('bash', [script, ...(opts.components ?? [])], { all: true, reject: false, buffer: false, stdin: 'ignore' });
  for await (const line of proc.iterable({ from: 'all' })) {
    lines.push(line);
    log(line);
  }
  const result = await proc;
  if (result.exitCode !== 0) {
    throw new Error(`provisioning failed (bash ${script} exited with ${String(result.exitCode)}); its output is above`);
  }
  // provision.sh prints the bin dir as its last stdout line.
  const binDir = lines.at(-1)?.trim();
  if (!binDir?.startsWith('/')) throw new Error(`provision.sh did not print the bin dir last (got ${JSON.stringify(binDir)})`);
  return binDir;
}
