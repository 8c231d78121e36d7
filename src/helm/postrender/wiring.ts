/**
 * How one `helm upgrade` runs our post-renderer: the plugin installed once per client (again
 * after a failure), and per call the flags and environment that point helm at it with one spec.
 */
import { delimiter } from 'node:path';
import type { Dialect } from '../dialect.js';
import type { PostRenderSpec } from '../types.js';
import { installPostRenderPlugin, POSTRENDER_PLUGIN_NAME, type InstalledPlugin, type PluginOptions, type PreparedRender } from './plugin.js';

export interface PostRenderSetup {
  readonly flags: string[];
  /** Added to helm's environment for this call. */
  readonly env: Record<string, string>;
  /** Its refusal (if helm fails) and cleanup. */
  readonly render: PreparedRender;
}

export class PostRenderWiring {
  private plugin: Promise<InstalledPlugin> | undefined;

  constructor(private readonly opts: PluginOptions) {}

  /**
   * Flags and environment that make helm run our post-renderer with `spec`. `helmPlugins` is the
   * HELM_PLUGINS helm would otherwise see; `errorFile` is where a refusal goes (script transport).
   */
  async setup(spec: PostRenderSpec, d: Dialect, helmPlugins: string, errorFile: string): Promise<PostRenderSetup> {
    const p = await this.installed();
    const render = p.prepare(spec, errorFile);
    return {
      flags: [
        // Helm 4 names a postrenderer/v1 plugin; helm 3 runs an executable.
        `--post-renderer=${d.major >= 4 ? POSTRENDER_PLUGIN_NAME : p.wrapper}`,
        `--post-renderer-args=${render.arg}`,
      ],
      env: {
        ...p.env,
        // Ours first; helm splits HELM_PLUGINS like PATH, so the user's plugins stay visible.
        HELM_PLUGINS: helmPlugins === '' ? p.pluginsDir : `${p.pluginsDir}${delimiter}${helmPlugins}`,
      },
      render,
    };
  }

  /** Removes the plugin directory if one was written; setup() installs it again when needed. */
  async close(): Promise<void> {
    const p = this.plugin;
    this.plugin = undefined;
    if (p !== undefined) await (await p.catch(() => undefined))?.remove();
  }

  private async installed(): Promise<InstalledPlugin> {
    this.plugin ??= installPostRenderPlugin(this.opts);
    try {
      return await this.plugin;
    } catch (err) {
      this.plugin = undefined;
      throw err;
    }
  }
}
