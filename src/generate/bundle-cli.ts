/**
 * `chartpilot generate bundle` and `chartpilot generate catalog`: flags in, an OLM bundle or a
 * file-based catalog out (files, as operator-sdk's `make bundle` and `opm` write them). Errors are
 * InputError/EnvironmentError, which cli.ts maps to exit codes.
 */
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ExitCode } from '../lib/exit-codes.js';
import { readIcon } from './bundle-meta.js';
import { renderOlmBundle } from './bundle.js';
import { buildCatalog, catalogYaml, loadBundle } from './catalog.js';
import { DEFAULTS, defaultImage, deployOptionProblems } from './deploy.js';
import { InputError } from './errors.js';
import { writeFiles } from './write-files.js';
import { clusterResolver } from './render.js';

/** What cli.ts's CommandIo provides (declared here too: importing cli.ts would be a cycle). */
export interface BundleIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (line: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export const BUNDLE_HELP = `Usage: chartpilot generate bundle --version <semver> [flags]

An Operator Lifecycle Manager bundle (registry+v1) for the kinds in watches.yaml, as operator-sdk's
\`make bundle\` writes it: bundle/manifests/ (the ClusterServiceVersion, the CRDs, the metrics
Service and metrics-reader ClusterRole), bundle/metadata/annotations.yaml,
bundle/tests/scorecard/config.yaml and bundle.Dockerfile. The CSV runs the Deployment of
\`generate deploy\` with the permissions of \`generate rbac\`, owns the CRDs of \`generate crd\`
(spec fields described from values.schema.json) and shows the samples of \`generate sample\`.
All install modes: WATCH_NAMESPACE comes from the OperatorGroup's target namespaces.
OperatorHub's fields come from the first chart's Chart.yaml; the flags override them. The output
is stable (no timestamp unless --created-at), so a bundle can be committed and diffed.

Flags:
  --version <semver>           the bundle's version, e.g. 0.1.0 (required)
  --channels <a,b>             channels to publish in (default alpha)
  --default-channel <name>     the package's default channel (one of --channels)
  --package <name>             the OLM package name (default: --name)
  --replaces <version>         the bundle this one upgrades (its version or CSV name)
  --skip-range <range>         versions this one replaces directly, e.g. ">=0.1.0 <0.2.0"
  --image <ref>                the operator image (default <name>:${defaultImage().split(':')[1] ?? ''})
  --output-dir <dir>           where bundle/ and bundle.Dockerfile go (default .)
  --with-service-monitor       also a ServiceMonitor (needs the Prometheus Operator's CRD where it is installed)
  --display-name <text>        OperatorHub: display name (default: the package name in title case)
  --description <text>         OperatorHub: description (default: Chart.yaml description)
  --provider <name>            OperatorHub: provider (default: the first maintainer)
  --maintainer "Name <email>"  OperatorHub: a maintainer (repeatable; default: Chart.yaml maintainers)
  --keyword <word>             OperatorHub: a keyword (repeatable; default: Chart.yaml keywords)
  --icon <file>                OperatorHub: a PNG, SVG, JPEG or GIF icon
  --min-kube-version <x.y.z>   default: the lower bound of Chart.yaml kubeVersion
  --created-at <date>          stamp the CSV's createdAt annotation
  --watches-file <path>        the watches file (default ./watches.yaml)
  --name <name>                the operator's name: Deployment, object name prefix (default ${DEFAULTS.name})
  --service-account <name>     the operator's ServiceAccount (default ${DEFAULTS.serviceAccount})
  --namespace <ns>             the suggested install namespace (default ${DEFAULTS.namespace})
  --offline                    do not ask a cluster; resolve kinds with the built-in table
  --kubeconfig <path>          the cluster to ask (default: $KUBECONFIG or ~/.kube/config)
  -h, --help                   show this help`;

export const CATALOG_HELP = `Usage: chartpilot generate catalog <bundle dir>... [flags]

A file-based OLM catalog of one package over bundle directories written by \`generate bundle\`
(each holds manifests/ and metadata/): an olm.package, one olm.channel per channel with the
bundles in version order (their replaces and skipRange), and one olm.bundle per bundle with its
objects inline. Serve it with \`opm serve <output-dir>\` or build a catalog image from it.

Flags:
  --output-dir <dir>           where <package>/catalog.yaml goes (default catalog)
  --package <name>             check that every bundle belongs to this package
  --default-channel <name>     the package's default channel (default: the newest bundle's)
  --bundle-image <ref>         each bundle's image, {version} replaced, e.g.
                               registry.example.com/webapp-operator-bundle:v{version}
                               (default: none; the objects are inline either way)
  -h, --help                   show this help`;

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

function parseFlags(argv: readonly string[], options: Options, allowPositionals = false): { values: Values; positionals: string[] } {
  let r;
  try {
    r = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  } catch (err) {
    throw new InputError([err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err)]);
  }
  if (!allowPositionals && r.positionals.length > 0) throw new InputError([`unexpected argument "${r.positionals[0] ?? ''}"`]);
  return { values: r.values, positionals: r.positionals };
}

function str(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

function strings(values: Values, name: string): string[] | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string');
}

function commaList(text: string | undefined): string[] | undefined {
  return text === undefined ? undefined : [...new Set(text.split(',').map((s) => s.trim()).filter((s) => s !== ''))];
}

export async function bundleCommand(argv: readonly string[], io: BundleIo): Promise<number> {
  const { values } = parseFlags(argv, {
    version: { type: 'string' },
    channels: { type: 'string' },
    'default-channel': { type: 'string' },
    package: { type: 'string' },
    replaces: { type: 'string' },
    'skip-range': { type: 'string' },
    image: { type: 'string' },
    'output-dir': { type: 'string' },
    'with-service-monitor': { type: 'boolean' },
    'display-name': { type: 'string' },
    description: { type: 'string' },
    provider: { type: 'string' },
    maintainer: { type: 'string', multiple: true },
    keyword: { type: 'string', multiple: true },
    icon: { type: 'string' },
    'min-kube-version': { type: 'string' },
    'created-at': { type: 'string' },
    'watches-file': { type: 'string' },
    name: { type: 'string' },
    'service-account': { type: 'string' },
    namespace: { type: 'string' },
    offline: { type: 'boolean' },
    kubeconfig: { type: 'string' },
  });
  const version = str(values, 'version');
  if (version === undefined) throw new InputError(['--version is required: the bundle version, e.g. --version 0.1.0']);
  const name = str(values, 'name') ?? DEFAULTS.name;
  const operator = {
    name,
    namespace: str(values, 'namespace') ?? DEFAULTS.namespace,
    serviceAccount: str(values, 'service-account') ?? DEFAULTS.serviceAccount,
    image: str(values, 'image') ?? `${name}:${defaultImage().split(':')[1] ?? '0.0.0'}`,
  };
  const problems = deployOptionProblems(operator);
  if (problems.length > 0) throw new InputError(problems);
  const iconFile = str(values, 'icon');
  const icon = iconFile === undefined ? undefined : await readIcon(iconFile);
  const resolver = await clusterResolver(values['offline'] === true, str(values, 'kubeconfig'), (line) => { io.stderr(`note: ${line}`); });
  const bundle = await renderOlmBundle(
    {
      ...operator,
      watchesFile: str(values, 'watches-file') ?? './watches.yaml',
      resolver,
      version,
      packageName: str(values, 'package') ?? name,
      channels: commaList(str(values, 'channels')) ?? ['alpha'],
      defaultChannel: str(values, 'default-channel'),
      replaces: str(values, 'replaces'),
      skipRange: str(values, 'skip-range'),
      createdAt: str(values, 'created-at'),
      withServiceMonitor: values['with-service-monitor'] === true,
      hub: {
        displayName: str(values, 'display-name'),
        description: str(values, 'description'),
        provider: str(values, 'provider'),
        maintainers: strings(values, 'maintainer'),
        keywords: strings(values, 'keyword'),
        minKubeVersion: str(values, 'min-kube-version'),
        icon,
      },
    },
    io.env,
  );
  for (const n of bundle.notes) io.stderr(`note: ${n}`);
  for (const w of bundle.warnings) io.stderr(`warning: ${w}`);
  if (str(values, 'image') === undefined) {
    io.stderr(`warning: the CSV runs the default image ${operator.image}, which holds no watches.yaml or charts of yours: name your operator image with --image <registry>/<name>:<tag>`);
  }
  await writeFiles(str(values, 'output-dir') ?? '.', bundle.files, io);
  return ExitCode.ok;
}

export async function catalogCommand(argv: readonly string[], io: BundleIo): Promise<number> {
  const { values, positionals } = parseFlags(
    argv,
    { 'output-dir': { type: 'string' }, package: { type: 'string' }, 'default-channel': { type: 'string' }, 'bundle-image': { type: 'string' } },
    true,
  );
  if (positionals.length === 0) throw new InputError(['name the bundle directories: chartpilot generate catalog bundle/ [more bundles...]']);
  // A directory written by generate bundle's --output-dir holds bundle/; accept it as well.
  const bundles = [];
  for (const p of positionals) {
    const dir = resolve(p);
    bundles.push(await loadBundle(await isBundleRoot(dir) ? dir : join(dir, 'bundle')));
  }
  const catalog = buildCatalog(bundles, {
    packageName: str(values, 'package'),
    defaultChannel: str(values, 'default-channel'),
    bundleImage: str(values, 'bundle-image'),
  });
  await writeFiles(str(values, 'output-dir') ?? 'catalog', new Map([[join(catalog.packageName, 'catalog.yaml'), catalogYaml(catalog.documents)]]), io);
  return ExitCode.ok;
}

async function isBundleRoot(dir: string): Promise<boolean> {
  try {
    return (await stat(join(dir, 'metadata', 'annotations.yaml'))).isFile();
  } catch {
    return false;
  }
}
