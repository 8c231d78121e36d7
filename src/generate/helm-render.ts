/** `helm template` for the generators, through the project's Helm client (the only helm runner). */
import { createHelmClient } from '../helm/cli-client.js';
import { EnvironmentError } from './errors.js';
import { errorMessage } from '../lib/errors.js';

export interface HelmRenderer {
  /** Rejects with an EnvironmentError when helm cannot run at all. */
  check(): Promise<void>;
  render(chartPath: string, values: Record<string, unknown>): Promise<string>;
}

/** HELM_BIN, else helm on PATH, as `chartpilot run` finds it. */
export function helmRenderer(env: Readonly<Record<string, string | undefined>>): HelmRenderer {
  const fromEnv = env['HELM_BIN']?.trim() ?? '';
  const helmBin = fromEnv === '' ? 'helm' : fromEnv;
  const helm = createHelmClient({ helmBin });
  let checked: Promise<void> | undefined;
  const check = (): Promise<void> => {
    checked ??= helm.version(30_000).then(
      () => undefined,
      (err: unknown) => {
        throw new EnvironmentError(`cannot run helm (${helmBin}): ${errorMessage(err)}; install helm or set HELM_BIN`, { cause: err });
      },
    );
    return checked;
  };
  return {
    check,
    async render(chartPath, values) {
      await check();
      // The release name only shows up in object names, never in which kinds a chart creates.
      return helm.template({ release: 'release-name', namespace: 'default', chart: chartPath, values, timeoutMs: 120_000 });
    },
  };
}
