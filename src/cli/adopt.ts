/**
 * `chartpilot adopt` (and `run --adopt-existing-releases`): the explicit step that lets chartpilot
 * take over releases it did not write — operator-sdk's helm-operator's, an older chartpilot's —
 * for the CRs they were made for. For every CR of the watched kinds, every record of its release
 * that does not prove to be chartpilot's gets an adoption mark when adopt.ts's rules allow it
 * (helm/adoption.ts), and is named with the reason when not. The mark is a Helm release label
 * (record-origin.ts says why), written guarded by the record's resourceVersion: what was checked
 * is exactly what is marked.
 */
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { isAnsibleEntry, type WatchEntry } from '../config/types.js';
import { loadWatches } from '../config/watches.js';
import { isDnsLabel, isDnsSubdomain } from '../config/labels.js';
import { loadChartInfo } from '../generate/chart-meta.js';
import { decideAdoption, type ScopedObject } from '../helm/adoption.js';
import { resolveManifestObjects } from '../helm/postrender/resolve.js';
import { ADOPTED_LABEL, recordObjects } from '../helm/record-origin.js';
import { DEFAULT_SEAL_KEY_SECRET, loadSealKey, SealKeyError } from '../helm/seal-key.js';
import { createReleaseStore, labelRecord, readRecord } from '../helm/storage.js';
import { RecordVerdicts } from '../helm/record-verdicts.js';
import { deriveSealKey } from '../helm/seal.js';
import { listObjects } from '../kube/objects.js';
import { createKubeClient, loadKubeConfig, type KubeClient } from '../kube/rest.js';
import type { ApiResource } from '../kube/types.js';
import { ExitCode } from '../lib/exit-codes.js';
import { errorMessage } from '../lib/errors.js';
import type { ObjectScope } from '../reconcile/confinement.js';
import { resolveLeaseNamespace } from '../controller/leader-election/config.js';
import { checkApiServer, PreflightError, resolveResources } from './preflight.js';

export const ADOPT_HELP = `Usage: chartpilot adopt [flags]

Takes over, for chartpilot, the Helm releases of existing custom resources that chartpilot did not
write: those operator-sdk's helm-operator made (switching to chartpilot), or an older chartpilot's.
chartpilot otherwise refuses to act on any release record it did not write for the resource
(condition Irreconcilable, reason ForeignReleaseRecord).

For each resource of the kinds in the watches file, each record of its release (Helm's Secret
per revision) that chartpilot did not write is adopted when it holds this
release, was made from the watches entry's chart, and lists only objects the entry allows (the
resource's namespace; others only with allowClusterScoped/allowCrossNamespace). Adopting adds the
Helm release label ${ADOPTED_LABEL} to that record (a keyed mark of exactly its objects; Helm keeps
it when it supersedes the record; nothing else changes); the operator then upgrades the release as
its own. Switching back to operator-sdk keeps working: it ignores the label. One line per record: adopted, or refused and why.

Flags:
  --watches-file <path>        the watches file (default ./watches.yaml)
  --namespace <ns>             only resources in this namespace (default: all namespaces)
  --dry-run                    say what would be adopted; change nothing
  --operator-namespace <ns>    where the operator's seal key Secret is (default: the pod's, else $POD_NAMESPACE, else "default")
  --seal-key-secret <name>     its name (default ${DEFAULT_SEAL_KEY_SECRET}; as given to chartpilot run)
  --kubeconfig <path>          the cluster (default: $KUBECONFIG, ~/.kube/config or in-cluster)

Exit codes: 0 every record is chartpilot's or adopted, 2 bad flags or watches file,
3 cluster not reachable / CRD or permission missing, 4 some records were refused (named above).`;

export interface AdoptIo {
  readonly stdout: (line: string) => void;
  readonly stderr: (line: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface AdoptTally {
  adopted: number;
  refused: number;
}

export interface AdoptOptions {
  readonly client: KubeClient;
  readonly masterKey: Buffer;
  readonly entries: ReadonlyMap<WatchEntry, ApiResource>;
  /** [] = all namespaces. */
  readonly namespaces: readonly string[];
  readonly dryRun: boolean;
  /** One line per record looked at. */
  readonly report: (line: string) => void;
  readonly log?: Logger | undefined;
}

/** Adopts what may be adopted for every CR of `entries`; returns how many were adopted and refused. */
export async function adoptReleases(opts: AdoptOptions): Promise<AdoptTally> {
  const { client } = opts;
  const store = createReleaseStore(client, new RecordVerdicts(client, { masterKey: opts.masterKey }));
  const tally: AdoptTally = { adopted: 0, refused: 0 };
  for (const [entry, resource] of opts.entries) {
    // Adoption is of Helm release records; an Ansible kind keeps none.
    if (isAnsibleEntry(entry)) {
      opts.report(`skipped ${entry.kind}: it is served by an Ansible role or playbook, which has no Helm releases to adopt`);
      continue;
    }
    const chartName = await chartNameOf(entry);
    const namespaces = opts.namespaces.length === 0 ? [undefined] : opts.namespaces;
    for (const ns of namespaces) {
      const crs = await listObjects(client, resource, ns, { metadataOnly: true });
      for (const cr of crs.items) {
        const namespace = cr.metadata.namespace ?? 'default';
        const name = cr.metadata.name;
        const uid = cr.metadata.uid;
        if (uid === undefined) continue;
        const revisions = await store.revisions(namespace, name);
        const foreign = await store.foreignRevisions(namespace, name, uid, revisions);
        for (const r of foreign.sort((a, b) => a.revision - b.revision)) {
          const what = `${namespace}/${r.secretName} for ${entry.kind} ${namespace}/${name}`;
          const outcome = await adoptOne(client, {
            key: deriveSealKey(opts.masterKey, uid),
            secretName: r.secretName,
            namespace,
            releaseName: name,
            chartName,
            entry,
            dryRun: opts.dryRun,
          });
          if (outcome.adopted) tally.adopted++;
          else tally.refused++;
          opts.report(outcome.adopted ? `${opts.dryRun ? 'would adopt' : 'adopted'} ${what}` : `refused ${what}: ${outcome.why}`);
        }
      }
    }
  }
  return tally;
}

async function adoptOne(
  client: KubeClient,
  at: { key: Buffer; secretName: string; namespace: string; releaseName: string; chartName: string; entry: WatchEntry; dryRun: boolean },
): Promise<{ adopted: true } | { adopted: false; why: string }> {
  const read = await readRecord(client, at.namespace, at.secretName);
  if (read === 'missing') return { adopted: false, why: 'it is gone' };
  if (read === 'unreadable') return { adopted: false, why: 'it is not a Helm release record' };
  let objects: readonly ScopedObject[] | { unreadable: string };
  try {
    const parsed = recordObjects(read.record, resolveManifestObjects);
    const scoped: ScopedObject[] = [];
    for (const object of parsed) scoped.push({ object, scope: await scopeOf(client, object) });
    objects = scoped;
  } catch (err) {
    objects = { unreadable: errorMessage(err) };
  }
  const decision = decideAdoption({
    key: at.key,
    record: read.record,
    releaseName: at.releaseName,
    namespace: at.namespace,
    chartName: at.chartName,
    confinement: { namespace: at.namespace, allowClusterScoped: at.entry.allowClusterScoped, allowCrossNamespace: at.entry.allowCrossNamespace },
    objects,
  });
  if (!decision.adopt) return { adopted: false, why: decision.why };
  if (at.dryRun) return { adopted: true };
  // Guarded by the resourceVersion read: a record changed since is not marked.
  const labelled = await labelRecord(client, { namespace: at.namespace, secretName: at.secretName, resourceVersion: read.resourceVersion }, { key: ADOPTED_LABEL, value: decision.mark });
  return labelled === 'labelled' ? { adopted: true } : { adopted: false, why: 'it changed while it was checked; run adopt again' };
}

async function scopeOf(client: KubeClient, object: Record<string, unknown>): Promise<ObjectScope> {
  const { apiVersion, kind } = object;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return 'unknown';
  const resource = await client.resourceFor(apiVersion, kind).catch(() => undefined);
  if (resource === undefined) return 'unknown';
  return resource.namespaced ? 'namespaced' : 'cluster';
}

/** The name in the entry's Chart.yaml (for a chart from a registry: the name it is published under). */
async function chartNameOf(entry: WatchEntry): Promise<string> {
  const remote = entry.remote;
  if (remote !== undefined) return remote.type === 'oci' ? (remote.name.split('/').at(-1) ?? remote.name) : remote.name;
  return (await loadChartInfo(entry.chartPath)).name;
}

/**
 * The operator's namespace, where its seal key is: the pod's own (its service account's
 * namespace file), else POD_NAMESPACE, else `default` (an operator run outside a cluster).
 */
export function defaultOperatorNamespace(env: Readonly<Record<string, string | undefined>>): string {
  const ns = resolveLeaseNamespace('', env);
  return ns.ok ? ns.namespace : 'default';
}

/** `chartpilot adopt [flags]`. */
export async function adoptCommand(argv: readonly string[], io: AdoptIo): Promise<number> {
  let values;
  try {
    values = parseArgs({
      args: [...argv],
      options: {
        'watches-file': { type: 'string', default: './watches.yaml' },
        namespace: { type: 'string' },
        'dry-run': { type: 'boolean', default: false },
        'operator-namespace': { type: 'string' },
        'seal-key-secret': { type: 'string', default: DEFAULT_SEAL_KEY_SECRET },
        kubeconfig: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    io.stderr(`error: ${errorMessage(err)}`);
    io.stderr('run "chartpilot adopt --help" for the flags');
    return ExitCode.badConfig;
  }
  if (values.help) {
    io.stdout(ADOPT_HELP);
    return ExitCode.ok;
  }
  const problems: string[] = [];
  const namespace = values.namespace;
  if (namespace !== undefined && !isDnsLabel(namespace)) problems.push(`--namespace is "${namespace}"; give a namespace name, or leave it out for all`);
  const operatorNamespace = values['operator-namespace'] ?? defaultOperatorNamespace(io.env);
  if (!isDnsLabel(operatorNamespace)) problems.push(`--operator-namespace is "${operatorNamespace}"; give the namespace the operator runs in`);
  const secretName = values['seal-key-secret'];
  if (!isDnsSubdomain(secretName)) problems.push(`--seal-key-secret is "${secretName}"; give a Secret name`);
  const loaded = await loadWatches(values['watches-file'], io.env);
  if (!loaded.ok) problems.push(...loaded.problems);
  if (problems.length > 0 || !loaded.ok) {
    for (const p of problems) io.stderr(`error: ${p}`);
    return ExitCode.badConfig;
  }
  if (values.kubeconfig !== undefined) process.env.KUBECONFIG = values.kubeconfig;
  let client: KubeClient;
  try {
    const kubeConfig = loadKubeConfig();
    client = createKubeClient(kubeConfig, { userAgent: 'chartpilot-adopt' });
    await checkApiServer(client, kubeConfig.server);
    const entries = await resolveResources(client, loaded.entries);
    const { key } = await loadSealKey(client, { namespace: operatorNamespace, name: secretName });
    const tally = await adoptReleases({
      client,
      masterKey: key,
      entries,
      namespaces: namespace === undefined ? [] : [namespace],
      dryRun: values['dry-run'],
      report: io.stdout,
    });
    io.stderr(`${values['dry-run'] ? 'would adopt' : 'adopted'} ${tally.adopted} record(s), refused ${tally.refused}`);
    return tally.refused > 0 ? ExitCode.adoptRefused : ExitCode.ok;
  } catch (err) {
    if (err instanceof PreflightError) {
      for (const p of err.problems) io.stderr(`error: ${p}`);
      return ExitCode.environment;
    }
    if (err instanceof SealKeyError) {
      io.stderr(`error: ${err.message}`);
      return ExitCode.environment;
    }
    throw err;
  }
}
