/**
 * Installs chartpilot's post-renderer where helm can find it.
 *
 * Helm 4 `--post-renderer NAME` names a plugin of type `postrenderer/v1` found in one of the
 * directories listed in HELM_PLUGINS (each holding `<plugin>/plugin.yaml`). With the subprocess
 * runtime helm runs `command args… <--post-renderer-args…>`, manifest on stdin, result on
 * stdout, after expanding ${VAR} in command and args from its own environment. Helm 3 instead
 * takes the path of an executable, so a tiny sh wrapper is written beside the plugin.yaml.
 *
 * Two ways to run the transformation: curl posting to the operator's own render server (socket,
 * the default where curl exists, see server.ts), or a Node script per call (script, the fallback).
 */
import { accessSync, constants, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import { BUNDLE_DIR, packageLayout, type PackageLayout } from '../../lib/package-root.js';
import { makeProcessDir } from '../../lib/process-dirs.js';
import type { PostRenderSpec } from '../types.js';
import { startRenderServer, type RenderServer } from './server.js';
import { parseRefusalFile, serializePostRenderSpec, type RenderRefusal } from './spec.js';

export const POSTRENDER_PLUGIN_NAME = 'chartpilot-postrender';
/** Env var naming the Node binary that runs the script (the operator's own). */
export const NODE_ENV = 'CHARTPILOT_NODE';
/** Env var naming the compiled post-render script. */
export const SCRIPT_ENV = 'CHARTPILOT_POSTRENDER_SCRIPT';
/** Env vars naming curl and the render server's socket (socket transport). */
export const CURL_ENV = 'CHARTPILOT_CURL';
export const SOCKET_ENV = 'CHARTPILOT_RENDER_SOCKET';

/** A postrenderer/v1 plugin.yaml running `command` with `args` (each already a YAML scalar). */
function pluginYaml(comment: string, command: string, args: readonly string[]): string {
  return `${comment}apiVersion: v1
type: postrenderer/v1
name: ${POSTRENDER_PLUGIN_NAME}
version: 0.1.0
runtime: subprocess
runtimeConfig:
  platformCommand:
    - command: ${command}
      args:
${args.map((a) => `        - ${a}`).join('\n')}
`;
}

/** Identical to src/helm/postrender/plugin.yaml (a unit test keeps them in step). */
export const POSTRENDER_PLUGIN_YAML = pluginYaml(
  `# chartpilot's helm 4 post-renderer plugin (checked in for reading and for \`helm plugin install\`;
# the operator writes the identical file, POSTRENDER_PLUGIN_YAML in plugin.ts, to a private
# HELM_PLUGINS directory at run time when curl is missing; with curl it writes a variant that posts
# the manifest to the operator itself, SOCKET_PLUGIN_YAML).
# Helm expands \${VAR} in the command and args from its own environment; the client sets both.
`,
  `\${${NODE_ENV}}`,
  [`\${${SCRIPT_ENV}}`],
);

/**
 * curl posts stdin to the render server and prints the answer; --fail makes a refusal (HTTP 422)
 * a non-zero exit, which fails the helm action before anything is applied. `Expect:` is cleared
 * so a large manifest is not held back waiting for a 100-continue.
 */
const CURL_ARGS = ['--silent', '--show-error', '--fail', '--max-time', '600', '--unix-socket', `\${${SOCKET_ENV}}`, '--header', 'Content-Type: application/yaml', '--header', 'Expect:', '--data-binary', '@-'];

export const SOCKET_PLUGIN_YAML = pluginYaml(
  "# chartpilot's helm 4 post-renderer plugin, socket transport (written by the operator at run time).\n",
  `\${${CURL_ENV}}`,
  CURL_ARGS.map((a) => JSON.stringify(a)),
);

const SOCKET_WRAPPER_SH = `#!/bin/sh
# Helm 3 post-renderer entry, socket transport.
exec "$${CURL_ENV}" ${CURL_ARGS.map((a) => (a.startsWith('$') ? `"$${SOCKET_ENV}"` : `'${a}'`)).join(' ')} "$@"
`;

const WRAPPER_SH = `#!/bin/sh
# Helm 3 post-renderer entry (helm 3 runs an executable, not a plugin).
exec "$${NODE_ENV}" "$${SCRIPT_ENV}" "$@"
`;

/**
 * The script helm runs, a Node process per call (script transport), in the layout this process
 * runs from (src/lib/package-root.ts): tsc's main.js, or the bundle's own small postrender.js
 * (scripts/bundler.ts) — main.js is not beside the bundle, and the whole operator's bundle would
 * cost every helm call far more to load.
 */
export function postrenderScript(layout: PackageLayout): string {
  return layout.bundled ? join(layout.root, BUNDLE_DIR, 'postrender.js') : join(layout.root, 'dist', 'src', 'helm', 'postrender', 'main.js');
}

export const POSTRENDER_SCRIPT = postrenderScript(packageLayout());

/** One helm call's use of the post-renderer. */
export interface PreparedRender {
  /** The value of `--post-renderer-args`. */
  readonly arg: string;
  /** Why the post-renderer refused the manifest, after helm failed; undefined otherwise. */
  refusal(): Promise<RenderRefusal | undefined>;
  done(): void;
}

export interface InstalledPlugin {
  readonly transport: 'socket' | 'script';
  /** Value for HELM_PLUGINS (the directory holding the plugin's directory). */
  readonly pluginsDir: string;
  /** Helm 3 `--post-renderer` executable. */
  readonly wrapper: string;
  /** Environment helm must have so the plugin finds node and the script. */
  readonly env: Readonly<Record<string, string>>;
  /** `errorFile`: where the script transport writes a refusal (helm drops the plugin's stderr). */
  prepare(spec: PostRenderSpec, errorFile: string): PreparedRender;
  remove(): Promise<void>;
}

export interface PluginOptions {
  /** Node binary for the script transport; default the operator's own. */
  readonly nodeBin?: string | undefined;
  /** curl for the socket transport (default: curl on PATH); null forces the script transport. */
  readonly curlBin?: string | null | undefined;
  readonly baseDir?: string | undefined;
}

/** A unix socket path must fit in sockaddr_un (108 bytes on Linux, 104 on macOS). */
const MAX_SOCKET_PATH = 100;

/** The absolute path of an executable (a name is looked up on PATH), or undefined. */
function executable(nameOrPath: string): string | undefined {
  const candidates = isAbsolute(nameOrPath) ? [nameOrPath] : (process.env.PATH ?? '').split(delimiter).filter((d) => d !== '').map((d) => join(d, nameOrPath));
  return candidates.find((c) => {
    try {
      accessSync(c, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
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
export async function installPostRenderPlugin(opts: PluginOptions = {}): Promise<InstalledPlugin> {
  const nodeBin = opts.nodeBin ?? process.execPath;
  const pluginsDir = await makeProcessDir(opts.baseDir ?? tmpdir(), 'chartpilot-helm-plugins-');
  removeAtExit(pluginsDir);
  let server: RenderServer | undefined;
  try {
    const dir = join(pluginsDir, POSTRENDER_PLUGIN_NAME);
    await mkdir(dir, { mode: 0o700 });
    const socketPath = join(pluginsDir, 'render.sock');
    const curl = opts.curlBin === null || socketPath.length > MAX_SOCKET_PATH ? undefined : executable(opts.curlBin ?? 'curl');
    if (curl !== undefined) server = await startRenderServer(socketPath);
    const wrapper = join(dir, 'postrender.sh');
    await writeFile(join(dir, 'plugin.yaml'), server ? SOCKET_PLUGIN_YAML : POSTRENDER_PLUGIN_YAML, { mode: 0o600 });
    await writeFile(wrapper, server ? SOCKET_WRAPPER_SH : WRAPPER_SH, { mode: 0o700 });
    await chmod(wrapper, 0o700); // writeFile's mode is filtered by the umask
    const remove = async (): Promise<void> => {
      await server?.close();
      await rm(pluginsDir, { recursive: true, force: true });
      live.delete(pluginsDir);
    };
    if (server !== undefined && curl !== undefined) {
      const s = server;
      return {
        transport: 'socket',
        pluginsDir,
        wrapper,
        env: { [CURL_ENV]: curl, [SOCKET_ENV]: socketPath },
        prepare(spec) {
          const r = s.register(spec);
          return { arg: r.url, refusal: () => Promise.resolve(r.refusal()), done: () => { r.done(); } };
        },
        remove,
      };
    }
    return {
      transport: 'script',
      pluginsDir,
      wrapper,
      env: { [NODE_ENV]: nodeBin, [SCRIPT_ENV]: POSTRENDER_SCRIPT },
      prepare: (spec, errorFile) => ({
        // One argument, appended verbatim to the plugin's command line (no splitting on commas).
        arg: serializePostRenderSpec(spec, errorFile),
        refusal: () => readFile(errorFile, 'utf8').then(parseRefusalFile, () => undefined),
        done: () => undefined,
      }),
      remove,
    };
  } catch (err) {
    await server?.close();
    await rm(pluginsDir, { recursive: true, force: true });
    live.delete(pluginsDir);
    throw err;
  }
}
