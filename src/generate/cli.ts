/**
 * `chartpilot generate crd|rbac|deploy|sample|all|argocd|…` and `chartpilot new`: flags in, manifests out.
 * Exit codes as for `run`: 0 ok, 2 bad input (flags, watches.yaml, charts), 3 environment (helm
 * cannot run, files cannot be written).
 */
import { join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ExitCode } from '../lib/exit-codes.js';
import { isDnsLabel, isDnsSubdomain } from '../config/labels.js';
import { ChartProblem } from './chart-meta.js';
import { ChartReadError } from '../config/chart-files.js';
import { argocdConfigMapYaml } from './argocd.js';
import { ANSIBLE_IMAGE_NAME, DEFAULTS, defaultImage, deployOptionProblems, packageVersion, type DeployOptions } from './deploy.js';
import { EnvironmentError, InputError } from './errors.js';
import { DEFAULT_MONITORING_NAMESPACE } from './network-policy.js';
import { writeFiles } from './write-files.js';
import { helmRenderer } from './helm-render.js';
import { BUNDLE_HELP, bundleCommand, CATALOG_HELP, catalogCommand } from './bundle-cli.js';
import { dirProblems, NEW_HELP, newProject } from './new.js';
import { MONITORING_HELP, monitoringCommand } from './monitoring-cli.js';
import { NEW_ANSIBLE_HELP, newAnsibleProject } from './new-ansible.js';
import { clusterResolver, crdYaml, deployYaml, renderBundle, renderCrds, renderRbac, renderSamples, watchedKinds } from './render.js';

export interface CommandIo {
  readonly stdout: (text: string) => void;
  /** One line, without its newline. */
  readonly stderr: (line: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

const processIo: CommandIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
};

/** The API version `new` gives a kind when --version is left out. */
const DEFAULT_API_VERSION = 'v1alpha1';

export const GENERATE_HELP = `Usage: chartpilot generate <what> [flags]

Prints Kubernetes manifests (multi-document YAML) for the kinds in watches.yaml.

  crd      CustomResourceDefinitions, with a spec schema from each chart's values.schema.json
           (or an Ansible role's meta/argument_specs.yml)
  rbac     least-privilege ClusterRole (or Roles) for the operator's ServiceAccount
  deploy   Namespace, ServiceAccount, the operator Deployment and its metrics Service and roles
  sample   a sample custom resource per kind; its spec is the chart's values.yaml (or the role's
           argument spec defaults)
  all      all of the above as files in --output-dir, with a Kustomization
  bundle   an Operator Lifecycle Manager bundle (ClusterServiceVersion, CRDs, metadata, bundle.Dockerfile)
  catalog  a file-based OLM catalog over bundles, for opm serve or a catalog image
  monitoring  alerts (a PrometheusRule or a plain rule file) and a Grafana dashboard
  argocd   Argo CD health checks for the kinds (a patch of argocd-cm)

Run "chartpilot generate <what> --help" for the flags of each.
Exit codes: 0 ok, 2 bad flags, watches.yaml, chart or role, 3 environment (helm cannot run, files cannot be written).`;

const WATCHES_FLAG = `  --watches-file <path>        the watches file (default ./watches.yaml)`;
const OPERATOR_FLAGS = `  --name <name>                the operator's name: Deployment, object name prefix (default ${DEFAULTS.name})
  --namespace <ns>             the operator's namespace (default ${DEFAULTS.namespace})
  --service-account <name>     the operator's ServiceAccount (default ${DEFAULTS.serviceAccount})`;
const MONITORING_NAMESPACE_FLAG = `  --monitoring-namespace <ns>  whose pods may reach the metrics port (NetworkPolicy; default ${DEFAULT_MONITORING_NAMESPACE})`;
const CLUSTER_FLAGS = `  --offline                    do not ask a cluster; resolve kinds with the built-in table
  --kubeconfig <path>          the cluster to ask (default: $KUBECONFIG or ~/.kube/config)`;

const HELP: Record<string, string> = {
  crd: `Usage: chartpilot generate crd [flags]

One CustomResourceDefinition per kind in watches.yaml. A chart with values.schema.json gets a
structural schema derived from it: wrong types and values are refused by the API server, unknown
keys are pruned (and refused by kubectl, whose field validation is strict). Where the CRD checks
less than the JSON schema, a note says so (Helm still checks everything when it installs).
Without a values.schema.json, spec accepts any values.
A kind served by an Ansible role gets its schema from the role's meta/argument_specs.yml (entry
point main; camelCase keys when snakeCaseParameters, as the operator converts them), else any
values, as operator-sdk's Ansible scaffold.

Flags:
${WATCHES_FLAG}
  --output-dir <dir>           write one <group>_<plural>.yaml per CRD there instead of printing
  -h, --help                   show this help`,
  rbac: `Usage: chartpilot generate rbac [flags]

The operator's permissions, least privilege: its kinds (with /status and /finalizers), Helm's
release Secrets, events, its leader election Lease, and exactly the kinds the charts create,
found by rendering each chart (helm template with its default values and any --sample) and by
reading its templates. Kinds resolve through the cluster's discovery when one answers, else a
built-in table; a kind neither knows is granted under a guessed name and flagged.
For Ansible kinds, the kinds their roles' and playbooks' kubernetes.core.k8s (all verbs), k8s_info
(read) and operator_sdk.util.k8s_status (/status) tasks name literally, following literal
includes and templates; tasks whose kind is computed are listed under Review, to grant by hand.

Flags:
${WATCHES_FLAG}
${OPERATOR_FLAGS}
  --role-namespace <ns,...>    grant Roles in these namespaces only (match WATCH_NAMESPACE);
                               default: a ClusterRole for all namespaces (repeatable)
  --default-service-account <name>
                               as for run: entries without serviceAccount run as this
                               ServiceAccount of each resource's namespace; the operator then
                               gets impersonate on exactly the names used, and only reads what
                               they create
  --tenant-namespace <ns,...>  also a ServiceAccount, Role and RoleBinding there for each
                               ServiceAccount the charts run as: what the charts' objects and
                               Helm's release Secrets need (repeatable)
  --sample <file>              also render the charts with the spec of each CR in this file (repeatable)
${CLUSTER_FLAGS}
  -h, --help                   show this help

Environment: HELM_BIN, the helm binary (default: helm on PATH).`,
  deploy: `Usage: chartpilot generate deploy [flags]

The Namespace, ServiceAccount and Deployment that run the operator: non-root, read-only root
filesystem, no capabilities, RuntimeDefault seccomp, probes, resource limits, leader election.
As operator-sdk's scaffold: /metrics over HTTPS on 8443 (--metrics-secure --metrics-require-rbac),
a metrics Service, the ClusterRoles <name>-metrics-auth (bound to the operator: token and access
reviews of each scrape) and <name>-metrics-reader (bind it to whoever scrapes), and a
ServiceMonitor for the Prometheus Operator, commented out. A NetworkPolicy <name>-ingress admits
the metrics port only from --monitoring-namespace and the probe port from no pod (the kubelet
probes from the node, which NetworkPolicy always lets through).

Flags:
${OPERATOR_FLAGS}
  --image <ref>                the image holding chartpilot, watches.yaml and the charts
                               (default <name>:${defaultImage().split(':')[1] ?? ''})
${MONITORING_NAMESPACE_FLAG}
  --with-prometheus-rule       also the alerts of "generate monitoring" as a PrometheusRule (needs
                               the Prometheus Operator's CRDs; the ServiceMonitor is in comments)
  --ansible                    kinds are served by Ansible roles: the Deployment's settings for
                               ansible-runner (ANSIBLE_GATHERING, memory, a larger /tmp); build the
                               image FROM ${ANSIBLE_IMAGE_NAME} (generate all and bundle see this from watches.yaml)
  --shards <replicas>          that many replicas share the resources (run --shards, POD_NAME from
                               the downward API) instead of one leader, and a Role for the ring's
                               Leases (get, list, watch, create, update, delete), and a
                               ValidatingAdmissionPolicy (Kubernetes 1.30+) letting only the
                               operator write the shard labels
  --watches-file <path>        with --shards: the policy covers only the kinds this file watches
                               (default: every kind)
  -h, --help                   show this help`,
  sample: `Usage: chartpilot generate sample [flags]

A sample custom resource per kind in watches.yaml; its spec is the chart's values.yaml, comments
included, or for an Ansible kind the defaults of its role's argument specs (else empty).

Flags:
${WATCHES_FLAG}
  -h, --help                   show this help`,
  all: `Usage: chartpilot generate all --output-dir <dir> [flags]

Writes everything that runs the operator for watches.yaml into <dir>: namespace.yaml,
crds/<group>_<plural>.yaml, service-account.yaml, rbac.yaml (cluster-wide), operator.yaml,
operator-metrics.yaml (the metrics Service and roles), network-policy.yaml (who may connect),
samples/<kind>.yaml and a Kustomization (kubectl apply -k <dir>). Existing files are replaced.
(Alerts and a dashboard: generate monitoring.)

Flags:
  --output-dir <dir>           where to write (required)
${WATCHES_FLAG}
${OPERATOR_FLAGS}
  --image <ref>                the operator image (default <name>:${defaultImage().split(':')[1] ?? ''})
${MONITORING_NAMESPACE_FLAG}
${CLUSTER_FLAGS}
  -h, --help                   show this help`,
  bundle: BUNDLE_HELP,
  catalog: CATALOG_HELP,
  monitoring: MONITORING_HELP,
  argocd: `Usage: chartpilot generate argocd [flags]

A health check per kind in watches.yaml for Argo CD (resource.customizations.health.<group>_<kind>
in argocd-cm), so an Application shows a chartpilot CR as Healthy, Progressing, Degraded or
Suspended from the verdict the operator writes in status.chartpilot.summary, instead of calling
every CR Healthy. Merge the printed ConfigMap into Argo CD's:
kubectl -n argocd patch configmap argocd-cm --type merge --patch-file <file>.

Flags:
${WATCHES_FLAG}
  --argocd-namespace <ns>      Argo CD's namespace (default argocd)
  -h, --help                   show this help`,
};

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** Strict parsing; a mistake becomes an InputError (exit 2) instead of an exception. */
function parseFlags(argv: readonly string[], options: Options, maxPositionals = 0): { values: Values; positionals: string[] } {
  let r;
  try {
    r = parseArgs({ args: [...argv], options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: true });
  } catch (err) {
    throw new InputError([err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err)]);
  }
  if (r.positionals.length > maxPositionals) throw new InputError([`unexpected argument "${r.positionals[maxPositionals] ?? ''}"`]);
  return { values: r.values, positionals: r.positionals };
}

function str(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

function strings(values: Values, name: string): string[] {
  const v = values[name];
  const raw = Array.isArray(v) ? v : v === undefined ? [] : [v];
  return raw.filter((x): x is string => typeof x === 'string');
}

/** `chartpilot generate …`; `argv` is what follows "generate". */
export async function generateCommand(argv: readonly string[], io: CommandIo = processIo): Promise<number> {
  const [what, ...rest] = argv;
  return run(io, async () => {
    if (what === undefined) {
      io.stderr(GENERATE_HELP);
      return ExitCode.badConfig;
    }
    if (what === 'help' || what === '--help' || what === '-h') {
      io.stdout(`${GENERATE_HELP}\n`);
      return ExitCode.ok;
    }
    const command = COMMANDS[what];
    if (command === undefined) {
      io.stderr(`error: unknown generator "${what}"; choose one of ${Object.keys(HELP).join(', ')}`);
      return ExitCode.badConfig;
    }
    if (rest.includes('--help') || rest.includes('-h')) {
      io.stdout(`${HELP[what] ?? GENERATE_HELP}\n`);
      return ExitCode.ok;
    }
    return command(rest, io);
  });
}

/** `chartpilot new <dir> --chart … --group … --kind … [--version …]`; `argv` is what follows "new". */
export async function newCommand(argv: readonly string[], io: CommandIo = processIo): Promise<number> {
  return run(io, async () => {
    if (argv.includes('--help') || argv.includes('-h')) {
      io.stdout(`${argv.includes('--ansible') ? NEW_ANSIBLE_HELP : NEW_HELP}\n`);
      return ExitCode.ok;
    }
    if (argv.includes('--ansible')) return newAnsibleCommand(argv, io);
    const { values, positionals } = parseFlags(
      argv,
      {
        chart: { type: 'string' },
        group: { type: 'string' },
        version: { type: 'string' },
        kind: { type: 'string' },
        name: { type: 'string' },
        image: { type: 'string' },
        'base-image': { type: 'string' },
        repository: { type: 'string' },
        'chart-version': { type: 'string' },
      },
      1,
    );
    const problems: string[] = [];
    const dir = positionals[0];
    if (dir === undefined || dir === '') problems.push('name the directory to create: chartpilot new <dir> --chart <path> --group <group> --kind <Kind>');
    for (const flag of ['chart', 'group', 'kind']) {
      if (str(values, flag) === undefined) problems.push(`--${flag} is required (see chartpilot new --help)`);
    }
    if (problems.length > 0 || dir === undefined) throw new InputError(problems);
    const written = await newProject(
      {
        dir: resolve(dir),
        // A chart from a registry is a reference, not a path.
        chart: /^oci:\/\//iu.test(str(values, 'chart') ?? '') || str(values, 'repository') !== undefined ? (str(values, 'chart') ?? '') : resolve(str(values, 'chart') ?? ''),
        repository: str(values, 'repository'),
        chartVersion: str(values, 'chart-version'),
        group: str(values, 'group') ?? '',
        // As `new --ansible` and operator-sdk's `create api` default it.
        version: str(values, 'version') ?? DEFAULT_API_VERSION,
        kind: str(values, 'kind') ?? '',
        name: str(values, 'name'),
        image: str(values, 'image'),
        baseImage: str(values, 'base-image'),
      },
      {
        helm: helmRenderer(io.env, (line) => {
          io.stderr(`note: ${line}`);
        }),
        env: io.env,
        warn: (line) => { io.stderr(`warning: ${line}`); },
        note: (line) => { io.stderr(`note: ${line}`); },
      },
    );
    io.stderr(`created ${dir}: ${written.join(', ')}`);
    io.stderr(`next steps: ${join(dir, 'README.md')}`);
    return ExitCode.ok;
  });
}

/** `chartpilot new --ansible <dir> --group … --kind … [--version …]`. */
async function newAnsibleCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseFlags(
    argv,
    {
      ansible: { type: 'boolean' },
      group: { type: 'string' },
      version: { type: 'string' },
      kind: { type: 'string' },
      name: { type: 'string' },
      image: { type: 'string' },
      'base-image': { type: 'string' },
    },
    1,
  );
  const problems: string[] = [];
  const dir = positionals[0];
  if (dir === undefined || dir === '') problems.push('name the directory to create: chartpilot new --ansible <dir> --group <group> --kind <Kind>');
  for (const flag of ['group', 'kind']) {
    if (str(values, flag) === undefined) problems.push(`--${flag} is required (see chartpilot new --ansible --help)`);
  }
  if (problems.length > 0 || dir === undefined) throw new InputError(problems);
  const written = await newAnsibleProject(
    {
      dir: resolve(dir),
      group: str(values, 'group') ?? '',
      version: str(values, 'version') ?? DEFAULT_API_VERSION,
      kind: str(values, 'kind') ?? '',
      name: str(values, 'name'),
      image: str(values, 'image'),
      baseImage: str(values, 'base-image'),
    },
    {
      env: io.env,
      warn: (line) => { io.stderr(`warning: ${line}`); },
      note: (line) => { io.stderr(`note: ${line}`); },
      dirProblems,
    },
  );
  io.stderr(`created ${dir}: ${written.join(', ')}`);
  io.stderr(`next steps: ${join(dir, 'README.md')}`);
  return ExitCode.ok;
}

/** Prints what an InputError/EnvironmentError says and maps it to its exit code. */
async function run(io: CommandIo, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof InputError) {
      for (const p of err.problems) io.stderr(`error: ${p}`);
      return ExitCode.badConfig;
    }
    if (err instanceof ChartProblem || err instanceof ChartReadError) {
      io.stderr(`error: ${err.message}`);
      return ExitCode.badConfig;
    }
    if (err instanceof EnvironmentError) {
      io.stderr(`error: ${err.message}`);
      return ExitCode.environment;
    }
    throw err;
  }
}

type Command = (argv: readonly string[], io: CommandIo) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  crd: crdCommand,
  rbac: rbacCommand,
  deploy: deployCommand,
  sample: sampleCommand,
  all: allCommand,
  bundle: bundleCommand,
  catalog: catalogCommand,
  monitoring: monitoringCommand,
  argocd: argocdCommand,
};

async function argocdCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  const { values } = parseFlags(argv, { 'watches-file': { type: 'string' }, 'argocd-namespace': { type: 'string' } });
  const namespace = str(values, 'argocd-namespace') ?? 'argocd';
  if (!isDnsLabel(namespace)) throw new InputError([`--argocd-namespace "${namespace}" is not a namespace name (lower-case letters, digits and '-')`]);
  const kinds = await watchedKinds(str(values, 'watches-file') ?? './watches.yaml', io.env);
  io.stdout(argocdConfigMapYaml(kinds, packageVersion(), namespace));
  return ExitCode.ok;
}

async function crdCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  const { values } = parseFlags(argv, { 'watches-file': { type: 'string' }, 'output-dir': { type: 'string' } });
  const watchesFile = str(values, 'watches-file') ?? './watches.yaml';
  const crds = await renderCrds(watchesFile, io.env, (line) => { io.stderr(`note: ${line}`); });
  for (const c of crds) for (const n of c.notes) io.stderr(`note: ${c.name}: ${n}`);
  const outDir = str(values, 'output-dir');
  if (outDir === undefined) io.stdout(crds.map((c) => crdYaml(c, watchesFile)).join('---\n'));
  else await writeFiles(outDir, new Map(crds.map((c) => [c.fileName, crdYaml(c, watchesFile)])), io);
  return ExitCode.ok;
}

function operatorOptions(values: Values): { name: string; namespace: string; serviceAccount: string } {
  return {
    name: str(values, 'name') ?? DEFAULTS.name,
    namespace: str(values, 'namespace') ?? DEFAULTS.namespace,
    serviceAccount: str(values, 'service-account') ?? DEFAULTS.serviceAccount,
  };
}

const OPERATOR_OPTIONS: Options = {
  name: { type: 'string' },
  namespace: { type: 'string' },
  'service-account': { type: 'string' },
};
const CLUSTER_OPTIONS: Options = { offline: { type: 'boolean' }, kubeconfig: { type: 'string' } };

async function rbacCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  const { values } = parseFlags(argv, {
    'watches-file': { type: 'string' },
    ...OPERATOR_OPTIONS,
    'role-namespace': { type: 'string', multiple: true },
    'default-service-account': { type: 'string' },
    'tenant-namespace': { type: 'string', multiple: true },
    sample: { type: 'string', multiple: true },
    ...CLUSTER_OPTIONS,
  });
  const o = operatorOptions(values);
  const problems = deployOptionProblems(o);
  const namespaceList = (flag: string): string[] => {
    const list = [...new Set(strings(values, flag).flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== ''))];
    for (const ns of list) if (!isDnsLabel(ns)) problems.push(`--${flag} "${ns}" is not a namespace name (lower-case letters, digits and '-')`);
    return list;
  };
  const roleNamespaces = namespaceList('role-namespace');
  const tenantNamespaces = namespaceList('tenant-namespace');
  const defaultServiceAccount = str(values, 'default-service-account');
  if (defaultServiceAccount !== undefined && !isDnsSubdomain(defaultServiceAccount)) {
    problems.push(`--default-service-account "${defaultServiceAccount}" is not a ServiceAccount name (a lower-case DNS name such as tenant)`);
  }
  if (problems.length > 0) throw new InputError(problems);
  const resolver = await clusterResolver(values['offline'] === true, str(values, 'kubeconfig'), (line) => { io.stderr(`note: ${line}`); });
  const out = await renderRbac(
    { ...o, watchesFile: str(values, 'watches-file') ?? './watches.yaml', roleNamespaces, defaultServiceAccount, tenantNamespaces, sampleFiles: strings(values, 'sample'), resolver },
    io.env,
  );
  for (const w of out.warnings) io.stderr(`warning: ${w}`);
  io.stdout(out.yaml);
  return ExitCode.ok;
}

function deployOptions(values: Values): DeployOptions {
  const o = operatorOptions(values);
  const version = defaultImage().split(':')[1] ?? '0.0.0';
  const d = { ...o, image: str(values, 'image') ?? `${o.name}:${version}`, monitoringNamespace: str(values, 'monitoring-namespace') };
  const problems = deployOptionProblems(d);
  if (problems.length > 0) throw new InputError(problems);
  return d;
}

async function deployCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  const { values } = parseFlags(argv, {
    ...OPERATOR_OPTIONS,
    image: { type: 'string' },
    'monitoring-namespace': { type: 'string' },
    ansible: { type: 'boolean' },
    'with-prometheus-rule': { type: 'boolean' },
    shards: { type: 'string' },
    'watches-file': { type: 'string' },
  });
  const shardsText = str(values, 'shards');
  if (shardsText !== undefined && !(/^\d+$/u.test(shardsText) && Number(shardsText) >= 1 && Number(shardsText) <= 100)) {
    throw new InputError([`--shards "${shardsText}" must be the number of replicas, from 1 to 100`]);
  }
  const watchesFile = str(values, 'watches-file');
  io.stdout(
    deployYaml({
      ...deployOptions(values),
      ansible: values['ansible'] === true,
      withPrometheusRule: values['with-prometheus-rule'] === true,
      shards: shardsText === undefined ? undefined : Number(shardsText),
      shardKinds: shardsText === undefined || watchesFile === undefined ? undefined : await watchedKinds(watchesFile, io.env),
    }),
  );
  return ExitCode.ok;
}

async function sampleCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  const { values } = parseFlags(argv, { 'watches-file': { type: 'string' } });
  const samples = await renderSamples(str(values, 'watches-file') ?? './watches.yaml', io.env, (line) => { io.stderr(`note: ${line}`); });
  io.stdout(samples.map((s) => s.yaml).join('---\n'));
  return ExitCode.ok;
}

async function allCommand(argv: readonly string[], io: CommandIo): Promise<number> {
  const { values } = parseFlags(argv, {
    'watches-file': { type: 'string' },
    'output-dir': { type: 'string' },
    ...OPERATOR_OPTIONS,
    image: { type: 'string' },
    'monitoring-namespace': { type: 'string' },
    ...CLUSTER_OPTIONS,
  });
  const outDir = str(values, 'output-dir');
  if (outDir === undefined) throw new InputError(['--output-dir is required: the directory to write the manifests to, e.g. deploy']);
  const d = deployOptions(values);
  const resolver = await clusterResolver(values['offline'] === true, str(values, 'kubeconfig'), (line) => { io.stderr(`note: ${line}`); });
  const bundle = await renderBundle({ ...d, watchesFile: str(values, 'watches-file') ?? './watches.yaml', resolver }, io.env);
  for (const n of bundle.notes) io.stderr(`note: ${n}`);
  for (const w of bundle.warnings) io.stderr(`warning: ${w}`);
  await writeFiles(outDir, bundle.files, io);
  return ExitCode.ok;
}
