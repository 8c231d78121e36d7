// `npm run cluster:up` / `npm run cluster:down`: a long-lived local control plane in .cluster/
// for working by hand (kubectl, helm, running the operator against it).
import { join } from 'node:path';
import { isHealthy, startControlPlane, stopControlPlane } from './control-plane.js';
import { provision } from './provision.js';
import { repoRoot } from './paths.js';
import { errorMessage } from '../src/lib/errors.js';

const say = (line: string): void => { process.stderr.write(`${line}\n`); };

async function up(dir: string): Promise<void> {
  const binDir = await provision({ log: say });
  if (await isHealthy(dir)) {
    say(`a healthy control plane is already running in ${dir}`);
  } else {
    // Leftovers of a control plane that died (e.g. a reboot): clear them before starting anew.
    await stopControlPlane(dir);
    // ownerPid null: the daemons must outlive this command; `cluster:down` stops them.
    await startControlPlane({ dir, binDir, ownerPid: null, log: say });
  }
  process.stdout.write(
    `control plane ready: export KUBECONFIG=${join(dir, 'kubeconfig')}  (kubectl: ${join(binDir, 'kubectl')}, helm: ${join(binDir, 'helm')})\n`,
  );
}

async function down(dir: string): Promise<void> {
  await stopControlPlane(dir);
  say(`control plane in ${dir} stopped`);
}

async function main(): Promise<number> {
  const dir = join(repoRoot(), '.cluster');
  const command = process.argv[2];
  switch (command) {
    case 'up':
      await up(dir);
      return 0;
    case 'down':
      await down(dir);
      return 0;
    default:
      say('usage: cli.js up|down');
      return 2;
  }
}

try {
  process.exitCode = await main();
} catch (err) {
  say(errorMessage(err));
  process.exitCode = 1;
}
