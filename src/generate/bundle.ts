/**
 * `chartpilot generate bundle`: an OLM registry+v1 bundle (bundle/manifests, bundle/metadata,
 * bundle/tests/scorecard, bundle.Dockerfile) laid out as operator-sdk's `make bundle` lays it out,
 * from what the other generators produce for the watches file. Stable: the same input gives the
 * same bytes (no timestamp unless asked), so a bundle can be committed and diffed.
 */
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { fileText, type ChartFiles } from '../config/chart-files.js';
import { isPlainObject } from '../lib/json.js';
import { buildCsv, csvName, isSemver, splitRbac, withoutNamespace, type KubeObject } from './bundle-csv.js';
import { hubMetadata, type HubOverrides } from './bundle-meta.js';
import { isAnsibleEntry } from '../config/types.js';
import { readYamlFile } from './ansible-files.js';
import { loadChartInfo } from './chart-meta.js';
import { ansibleRunnableName } from './crd.js';
import { operatorYaml, packageVersion, type DeployOptions } from './deploy.js';
import { InputError } from './errors.js';
import { METRICS_PORT_NAME, metricsNames, metricsYaml } from './metrics.js';
import { yamlStream } from './output.js';
import { renderCrds, renderRbac, renderSamples, watchEntries, type Env } from './render.js';
import type { Resolver } from './rbac-plan.js';

/** The scorecard image matching the operator-sdk these bundles are validated with. */
const SCORECARD_IMAGE = 'quay.io/operator-framework/scorecard-test:v1.42.2';

export interface OlmBundleOptions extends DeployOptions {
  readonly watchesFile: string;
  readonly resolver: Resolver;
  readonly version: string;
  readonly packageName: string;
  readonly channels: readonly string[];
  readonly defaultChannel?: string | undefined;
  readonly replaces?: string | undefined;
  readonly skipRange?: string | undefined;
  readonly createdAt?: string | undefined;
  readonly withServiceMonitor: boolean;
  readonly hub: HubOverrides;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/u;

/** Problems with the bundle's own flags, one line each (the operator's are deployOptionProblems). */
export function bundleOptionProblems(o: Pick<OlmBundleOptions, 'version' | 'packageName' | 'channels' | 'defaultChannel' | 'replaces' | 'skipRange' | 'createdAt'>): string[] {
  const problems: string[] = [];
  if (!isSemver(o.version)) problems.push(`--version "${o.version}" is not a semantic version such as 0.1.0 (OLM orders bundles by it)`);
  if (!DNS1123_LABEL.test(o.packageName) || o.packageName.length > 50) {
    problems.push(`--package "${o.packageName}" must be a lower-case DNS label (letters, digits, '-'; at most 50 characters)`);
  }
  for (const c of o.channels) if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/u.test(c)) problems.push(`--channels: "${c}" is not a channel name such as alpha or stable-v1`);
  if (o.defaultChannel !== undefined && !o.channels.includes(o.defaultChannel)) {
    problems.push(`--default-channel "${o.defaultChannel}" is not one of --channels (${o.channels.join(', ')}): add it there`);
  }
  if (o.replaces !== undefined && !isSemver(o.replaces.replace(/^.*\.v/u, ''))) {
    problems.push(`--replaces "${o.replaces}" must name the bundle this one upgrades, by version (0.1.0) or CSV name (<package>.v0.1.0)`);
  }
  if (o.skipRange !== undefined && !/^[<>=~^\s\d.,|xX*-]+$/u.test(o.skipRange)) {
    problems.push(`--skip-range "${o.skipRange}" is not a semver range such as ">=0.1.0 <0.2.0"`);
  }
  if (o.createdAt !== undefined && Number.isNaN(Date.parse(o.createdAt))) problems.push(`--created-at "${o.createdAt}" is not a date such as 2026-01-01T00:00:00Z`);
  return problems;
}

function objectsOf(yamlText: string): KubeObject[] {
  return parseAllDocuments(yamlText, { version: '1.1' })
    .map((d) => d.toJS() as unknown)
    .filter(isPlainObject);
}

function nameOf(o: KubeObject): string {
  const m = o['metadata'];
  return isPlainObject(m) && typeof m['name'] === 'string' ? m['name'] : '';
}

/** operator-sdk's file names for non-CSV objects: `<name>_<group>_<version>_<kind>.yaml`, lower case. */
function objectFileName(o: KubeObject): string {
  const apiVersion = String(o['apiVersion']);
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  return `${nameOf(o)}_${group === '' ? '' : `${group ?? ''}_`}${version ?? ''}_${String(o['kind'])}.yaml`.toLowerCase().replace(/_+/gu, '_');
}

export interface BundleAnnotations {
  readonly packageName: string;
  readonly channels: readonly string[];
  readonly defaultChannel?: string | undefined;
}

/** bundle/metadata/annotations.yaml and the bundle.Dockerfile labels: the same keys. */
export function bundleAnnotations(a: BundleAnnotations): Record<string, string> {
  return {
    'operators.operatorframework.io.bundle.mediatype.v1': 'registry+v1',
    'operators.operatorframework.io.bundle.manifests.v1': 'manifests/',
    'operators.operatorframework.io.bundle.metadata.v1': 'metadata/',
    'operators.operatorframework.io.bundle.package.v1': a.packageName,
    'operators.operatorframework.io.bundle.channels.v1': a.channels.join(','),
    ...(a.defaultChannel === undefined ? {} : { 'operators.operatorframework.io.bundle.channel.default.v1': a.defaultChannel }),
    'operators.operatorframework.io.metrics.builder': `chartpilot-v${packageVersion()}`,
    'operators.operatorframework.io.test.mediatype.v1': 'scorecard+v1',
    'operators.operatorframework.io.test.config.v1': 'tests/scorecard/',
  };
}

export function bundleDockerfile(annotations: Readonly<Record<string, string>>): string {
  return [
    '# The bundle image: `buildah build -f bundle.Dockerfile -t <registry>/<package>-bundle:v<version> .`',
    'FROM scratch',
    '',
    ...Object.entries(annotations).map(([k, v]) => `LABEL ${k}=${v}`),
    '',
    'COPY bundle/manifests /manifests/',
    'COPY bundle/metadata /metadata/',
    'COPY bundle/tests/scorecard /tests/scorecard/',
    '',
  ].join('\n');
}

/** operator-sdk's default scorecard configuration: the basic and OLM suites. */
export function scorecardConfig(): KubeObject {
  const test = (suite: string, name: string): KubeObject => ({
    entrypoint: ['scorecard-test', name],
    image: SCORECARD_IMAGE,
    labels: { suite, test: `${name}-test` },
    storage: { spec: { mountPath: {} } },
  });
  return {
    apiVersion: 'scorecard.operatorframework.io/v1alpha3',
    kind: 'Configuration',
    metadata: { name: 'config' },
    stages: [
      {
        parallel: true,
        tests: [
          test('basic', 'basic-check-spec'),
          ...['olm-bundle-validation', 'olm-crds-have-validation', 'olm-crds-have-resources', 'olm-spec-descriptors', 'olm-status-descriptors'].map((n) => test('olm', n)),
        ],
      },
    ],
    storage: { spec: { mountPath: {} } },
  };
}

/** The Prometheus Operator's ServiceMonitor for the metrics Service (only on request: without its CRD the InstallPlan fails). */
function serviceMonitor(name: string): KubeObject {
  const n = metricsNames(name);
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: n.monitor, labels: { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'metrics' } },
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'metrics' } },
      endpoints: [
        {
          path: '/metrics',
          port: METRICS_PORT_NAME,
          scheme: 'https',
          bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
          // Self-signed unless --metrics-cert-path names a certificate: see generate deploy's comment.
          tlsConfig: { insecureSkipVerify: true },
        },
      ],
    },
  };
}

export interface OlmBundle {
  /** Path relative to the output directory → content. */
  readonly files: Map<string, string>;
  readonly warnings: string[];
  readonly notes: string[];
}

export async function renderOlmBundle(o: OlmBundleOptions, env: Env): Promise<OlmBundle> {
  const problems = bundleOptionProblems(o);
  if (problems.length > 0) throw new InputError(problems);
  const entries = await watchEntries(o.watchesFile, env);
  if (entries.length === 0) throw new InputError([`${o.watchesFile} has no kinds: a bundle needs at least one entry (group, version, kind, chart)`]);

  const charts = new Map<string, { name: string; description: string; files: ChartFiles; ansible: boolean }>();
  for (const e of entries) {
    if (charts.has(e.kind)) continue;
    if (isAnsibleEntry(e)) {
      // No Chart.yaml: OperatorHub's fields come from the flags (the warnings name them).
      const what = ansibleRunnableName(e.ansible);
      const description = e.ansible.role === undefined ? '' : await roleDescription(e.ansible.role);
      charts.set(e.kind, { name: what, description, files: { source: e.ansible.role ?? e.ansible.playbook ?? '', files: new Map() }, ansible: true });
      continue;
    }
    const info = await loadChartInfo(e.chartPath);
    charts.set(e.kind, { name: info.name, description: chartDescription(info.files), files: info.files, ansible: false });
  }
  const first = charts.get(entries[0]?.kind ?? '');
  if (first === undefined) throw new InputError([`${o.watchesFile} has no kinds`]);
  const hub = hubMetadata(o.packageName, first.files, o.hub);
  if (hub.problems.length > 0) throw new InputError(hub.problems);

  const crds = await renderCrds(o.watchesFile, env);
  // Namespaced RBAC (Roles) where chartpilot allows it, so that OLM can scope `permissions` to the
  // OperatorGroup's target namespaces; OLM turns them into ClusterRoles for AllNamespaces.
  const rbac = await renderRbac({ ...o, roleNamespaces: [o.namespace], sampleFiles: [] }, env);
  const samples = await renderSamples(o.watchesFile, env);
  const rbacObjects = [...objectsOf(rbac.yaml), ...objectsOf(metricsYaml(o))];
  const split = splitRbac(rbacObjects, o.serviceAccount);
  // Ansible kinds: the Deployment's settings for ansible-runner (generate deploy --ansible).
  const deployment = objectsOf(operatorYaml({ ...o, ansible: o.ansible ?? entries.some(isAnsibleEntry) }))[0];
  if (deployment === undefined) throw new Error('generate deploy produced no Deployment');
  const service = objectsOf(metricsYaml(o)).find((x) => x['kind'] === 'Service');

  const csv = buildCsv({
    packageName: o.packageName,
    version: o.version,
    image: o.image,
    deploymentName: o.name,
    deployment,
    serviceAccount: o.serviceAccount,
    rbac: split,
    crds: crds.map((c) => c.object),
    describeKind: (kind) => {
      const c = charts.get(kind);
      if (c === undefined) return kind;
      return `${kind} ${c.ansible ? `runs the Ansible ${c.name}` : `installs the Helm chart ${c.name}`}${c.description === '' ? '' : `: ${c.description}`}`;
    },
    samples: samples.flatMap((s) => objectsOf(s.yaml)),
    hub: hub.metadata,
    replaces: o.replaces === undefined ? undefined : o.replaces.includes('.v') ? o.replaces : csvName(o.packageName, o.replaces),
    skipRange: o.skipRange,
    createdAt: o.createdAt,
    namespace: o.namespace,
    builder: `chartpilot-v${packageVersion()}`,
  });

  const files = new Map<string, string>();
  files.set(`bundle/manifests/${o.packageName}.clusterserviceversion.yaml`, yamlStream([csv]));
  for (const c of crds) files.set(`bundle/manifests/${c.fileName}`, yamlStream([c.object]));
  const others = [...(service === undefined ? [] : [withoutNamespace(service)]), ...split.objects, ...(o.withServiceMonitor ? [serviceMonitor(o.name)] : [])];
  for (const x of others) files.set(`bundle/manifests/${objectFileName(x)}`, yamlStream([x]));
  const annotations = bundleAnnotations({ packageName: o.packageName, channels: o.channels, defaultChannel: o.defaultChannel });
  files.set('bundle/metadata/annotations.yaml', yamlStream([{ annotations }]));
  files.set('bundle/tests/scorecard/config.yaml', yamlStream([scorecardConfig()]));
  files.set('bundle.Dockerfile', bundleDockerfile(annotations));
  const notes = crds.flatMap((c) => c.notes.map((n) => `${c.name}: ${n}`));
  return { files, warnings: [...hub.warnings, ...rbac.warnings], notes };
}

function chartDescription(files: ChartFiles): string {
  const d = objectsOf(fileText(files, 'Chart.yaml') ?? '')[0]?.['description'];
  return typeof d === 'string' ? d.trim() : '';
}

/** galaxy_info.description of the role's meta/main.yml, or ''. */
async function roleDescription(roleDir: string): Promise<string> {
  const meta = await readYamlFile(join(roleDir, 'meta', 'main.yml'));
  const info = isPlainObject(meta) ? meta['galaxy_info'] : undefined;
  const d = isPlainObject(info) ? info['description'] : undefined;
  return typeof d === 'string' ? d.trim() : '';
}
