/**
 * `chartpilot adopt` (and `run --adopt-existing-releases`): the explicit step that lets chartpilot
 * take over releases it did not write — operator-sdk's helm-operator's, an older chartpilot's —
 * for the CRs they were made for. For every CR of the watched kinds, every record of its release
 * that does not prove to be chartpilot's gets the CR's record MAC (helm/record-mac.ts) when
 * adopt.ts's rules allow it (helm/adoption.ts), and is named with the reason when not. The MAC is
 * stamped guarded by the record's resourceVersion and covers its exact bytes: what was checked is
 * exactly what is adopted.
 */
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { isAnsibleEntry, type WatchEntry } from '../config/types.js';
import { loadWatches } from '../config/watches.js';
import { isDnsLabel, isDnsSubdomain } from '../config/labels.js';
import { loadChartInfo } from '../generate/chart-meta.js';
import { decideAdoption, type ScopedObject } from '../helm/adoption.js';
import { resolveManifestObjects } from '../helm/postrender/resolve.js';
import { RecordKeys, RECORD_MAC_ANNOTATION } from '../helm/record-mac.js';
import { recordObjects } from '../helm/record-origin.js';
import { DEFAULT_SEAL_KEY_SECRET, loadSealKey, SealKeyError } from '../helm/seal-key.js';
import { resolveOperatorNamespace } from './operator-namespace.js';
import { createReleaseStore, readRecord, stampRecord } from '../helm/storage.js';
import { RecordVerdicts } from '../helm/record-verdicts.js';
import { listObjects, mergePatchObject } from '../kube/objects.js';
import { createKubeClient, loadKubeConfig, type KubeClient } from '../kube/rest.js';
import type { ApiResource } from '../kube/types.js';
import { ExitCode } from '../lib/exit-codes.js';
import { errorMessage } from '../lib/errors.js';
import type { ObjectScope } from '../core/confinement.js';
import { checkApiServer, PreflightError, resolveResources } from './preflight.js';

/**
 * Set on a CR whose records `adopt` stamped, to the time it did: an annotation change is a
 * reconcile trigger of the running operator (cr-controller.ts needsReconcile), so the CR leaves
 * Irreconcilable at once instead of at its next period (50 s were seen). Chosen over the operator
 * watching release Secrets: its informer on the CRs is already there, so it costs one PATCH per
 * adopted CR and no new watch, cache or permission for the operator; only adopt's user needs
 * `patch` on the CRs, and without it the CR still reconciles at its next period (said per CR).
 */
export const ADOPTED_AT_ANNOTATION = 'chartpilot.io/adopted-at';

export const ADOPT_HELP = `Usage: chartpilot adopt [flags]

Takes over, for chartpilot, the Helm releases of existing custom resources that chartpilot did not
write: those operator-sdk's helm-operator made (switching to chartpilot), or an older chartpilot's.
chartpilot otherwise refuses to act on any release record it did not write for the resource
(condition Irreconcilable, reason ForeignReleaseRecord).

For each resource of the kinds in the watches file, each record of its release (Helm's Secret
per revision) that chartpilot did not write is adopted when it holds this
release, was made from the watches entry's chart, and lists only objects the entry allows (the
resource's namespace; others only with allowClusterScoped/allowCrossNamespace). Adopting adds the
annotation ${RECORD_MAC_ANNOTATION} to that record's Secret (a keyed MAC of exactly its bytes;
nothing else changes), and ${ADOPTED_AT_ANNOTATION} (the time) to the resource, so that a running
operator reconciles it at once; the operator then upgrades the release as its own. Records an older
chartpilot wrote (object seals) are adopted the same way. Switching back to operator-sdk keeps
working: it ignores the annotation. One line per record: adopted, or refused and why.

Flags:
  --watches-file <path>        the watches file (default ./watches.yaml)
  --namespace <ns>             only resources in this namespace (default: all namespaces)
  --dry-run                    say what would be adopted; change nothing
  --operator-namespace <ns>    where the operator's seal key Secret is (default: the pod's, else $POD_NAMESPACE;
                               outside a pod without either, adopt stops and asks for it)
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
  readonly recordKeys: RecordKeys;
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
  const keys = opts.recordKeys;
  const store = createReleaseStore(client, new RecordVerdicts(client, { keys }));
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
        let adoptedHere = 0;
        for (const r of foreign.sort((a, b) => a.revision - b.revision)) {
          const what = `${namespace}/${r.secretName} for ${entry.kind} ${namespace}/${name}`;
          const outcome = await adoptOne(client, {
            key: keys.keyOf(uid),
            secretName: r.secretName,
            namespace,
            releaseName: name,
            chartName,
            entry,
            dryRun: opts.dryRun,
          });
          if (outcome.adopted) {
            tally.adopted++;
            adoptedHere++;
          } else tally.refused++;
          opts.report(outcome.adopted ? `${opts.dryRun ? 'would adopt' : 'adopted'} ${what}` : `refused ${what}: ${outcome.why}`);
        }
        if (adoptedHere > 0 && !opts.dryRun) {
          const nudged = await mergePatchObject(client, { resource, namespace, name }, { metadata: { annotations: { [ADOPTED_AT_ANNOTATION]: new Date().toISOString() } } }).then(
            () => undefined,
            (err: unknown) => errorMessage(err),
          );
          if (nudged !== undefined) {
            opts.report(`could not annotate ${entry.kind} ${namespace}/${name} with ${ADOPTED_AT_ANNOTATION} (${nudged}): the operator takes it up at its next reconcile period instead of at once`);
          }
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
  const stamped = await stampRecord(client, { namespace: at.namespace, secretName: at.secretName, resourceVersion: read.resourceVersion }, at.key);
  return stamped === 'stamped' ? { adopted: true } : { adopted: false, why: 'it changed while it was checked; run adopt again' };
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
  const given = values['operator-namespace'];
  if (given !== undefined && !isDnsLabel(given)) problems.push(`--operator-namespace is "${given}"; give the namespace the operator runs in`);
  const secretName = values['seal-key-secret'];
  if (!isDnsSubdomain(secretName)) problems.push(`--seal-key-secret is "${secretName}"; give a Secret name`);
  const loaded = await loadWatches(values['watches-file'], io.env);
  if (!loaded.ok) problems.push(...loaded.problems);
  if (problems.length > 0 || !loaded.ok) {
    for (const p of problems) io.stderr(`error: ${p}`);
    return ExitCode.badConfig;
  }
  // Given, it is where the key is; else found as the operator finds it (never a guess).
  const found = given === undefined ? resolveOperatorNamespace({ name: '--operator-namespace', value: '' }, io.env) : { ok: true as const, namespace: given };
  if (!found.ok) {
    io.stderr(`error: ${found.problem}`);
    return ExitCode.environment;
  }
  const operatorNamespace = found.namespace;
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
      recordKeys: new RecordKeys(key),
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
