/**
 * Installs chartpilot's post-renderer where helm can find it.
 *
 * Helm 4 `--post-renderer NAME` names a plugin of type `postrenderer/v1` found in one of the
 * directories listed in HELM_PLUGINS (each holding `<plugin>/plugin.yaml`). With the subprocess
 * runtime helm runs `command args… <--post-renderer-args…>`, manifest on stdin, result on
 * stdout, after expanding ${VAR} in command and args from its own environment. Helm 3 instead
 * takes the path of an executable, so a tiny sh wrapper is written beside the plugin.yaml.
 */
import { rmSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const POSTRENDER_PLUGIN_NAME = 'chartpilot-postrender';
/** Env var naming the Node binary that runs the script (the operator's own). */
export const NODE_ENV = 'CHARTPILOT_NODE';
/** Env var naming the compiled post-render script. */
export const SCRIPT_ENV = 'CHARTPILOT_POSTRENDER_SCRIPT';

/** Identical to src/helm/postrender/plugin.yaml (a unit test keeps them in step). */
export const POSTRENDER_PLUGIN_YAML = `# chartpilot's helm 4 post-renderer plugin (checked in for reading and for \`helm plugin install\`;
# the operator writes the identical file, POSTRENDER_PLUGIN_YAML in plugin.ts, to a private
# HELM_PLUGINS directory at run time, because only compiled JavaScript ships in the package).
# Helm expands \${VAR} in the command and args from its own environment; the client sets both.
apiVersion: v1
type: postrenderer/v1
name: ${POSTRENDER_PLUGIN_NAME}
version: 0.1.0
runtime: subprocess
runtimeConfig:
  platformCommand:
    - command: \${${NODE_ENV}}
      args:
        - \${${SCRIPT_ENV}}
`;

const WRAPPER_SH = `#!/bin/sh
# Helm 3 post-renderer entry (helm 3 runs an executable, not a plugin).
exec "$${NODE_ENV}" "$${SCRIPT_ENV}" "$@"
`;

/** Path of the compiled script next to this module (dist/src/helm/postrender/main.js). */
export const POSTRENDER_SCRIPT = fileURLToPath(new URL('./main.js', import.meta.url));

export interface InstalledPlugin {
  /** Value for HELM_PLUGINS (the directory holding the plugin's directory). */
  readonly pluginsDir: string;
  /** Helm 3 `--post-renderer` executable. */
  readonly wrapper: string;
  /** Environment helm must have so the plugin finds node and the script. */
  readonly env: Readonly<Record<string, string>>;
  remove(): Promise<void>;
}

/** Plugin directories not yet removed; whatever is left goes when the process exits. */
const live = new Set<string>();
let exitHook = false;

function removeAtExit(dir: string): void {
  live.add(dir);
  if (exitHook) return;
  exitHook = true;
  // A process that never calls close() (or exits in between) must not leave one per start.
  process.once('exit', () => {
    for (const d of live) rmSync(d, { recursive: true, force: true });
  });
}

/** Writes the plugin into a fresh private directory (mode 0700) under `baseDir`. */
export async function installPostRenderPlugin(nodeBin = process.execPath, baseDir = tmpdir()): Promise<InstalledPlugin> {
  const pluginsDir = await mkdtemp(join(baseDir, 'chartpilot-helm-plugins-'));
  removeAtExit(pluginsDir);
  try {
    const dir = join(pluginsDir, POSTRENDER_PLUGIN_NAME);
    await mkdir(dir, { mode: 0o700 });
    await writeFile(join(dir, 'plugin.yaml'), POSTRENDER_PLUGIN_YAML, { mode: 0o600 });
    const wrapper = join(dir, 'postrender.sh');
    await writeFile(wrapper, WRAPPER_SH, { mode: 0o700 });
    await chmod(wrapper, 0o700); // writeFile's mode is filtered by the umask
    return {
      pluginsDir,
      wrapper,
      env: { [NODE_ENV]: nodeBin, [SCRIPT_ENV]: POSTRENDER_SCRIPT },
      remove: async () => {
        await rm(pluginsDir, { recursive: true, force: true });
        live.delete(pluginsDir);
      },
    };
  } catch (err) {
    await rm(pluginsDir, { recursive: true, force: true });
    live.delete(pluginsDir);
    throw err;
  }
}
