/**
 * `chartpilot run`: load watches.yaml, check the cluster, start one controller per kind, and run
 * until SIGTERM/SIGINT. Every way start-up can fail ends in one clear message and an exit code.
 * With leader election, only the replica holding the Lease starts controllers; the others serve
 * probes and metrics and wait.
 */
import type { Logger } from 'pino';
import type { WatchEntry } from '../config/types.js';
import { loadWatches } from '../config/watches.js';
import { newIdentity, resolveLeaseLocation, type LeaseLocation } from '../controller/leader-election/config.js';
import { ChartCache } from '../registry/cache.js';
import { ChartResolver } from '../registry/resolver.js';
import { kubeSecretReader } from '../registry/secrets.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LeaderElector } from '../controller/leader-election/elector.js';
import { KubeLeaseStore } from '../controller/leader-election/lease-store.js';
import { Manager, type AnsibleEngine } from '../controller/manager.js';
import { ConfigReloader } from '../controller/reloader.js';
import { checkApiServer, checkPermissions, PreflightError, requiredChecks, resolveResources, SCRAPE_REVIEW_CHECKS } from './preflight.js';
import { allImpersonate, impersonationChecks, warnUnconfinedCharts } from './tenancy.js';
import { handOverNote, parseHandOverNote, StoppedCalls } from '../helm/stopped-calls.js';
import { createKubeClient, loadKubeConfig } from '../kube/rest.js';
import { EventRecorder } from '../observe/events.js';
import type { CheckResult } from '../observe/health-server.js';
import { CertificateError, type CertificateFiles } from '../observe/certificates.js';
import { ListenError } from '../observe/http-server.js';
import { ScrapeAuthorizer } from '../observe/scrape-auth.js';
import { kubeReviewer } from '../kube/reviews.js';
import type { KubeClient } from '../kube/rest.js';
import { readServerStart } from '../kube/server-clock.js';
import type { ServerTimes } from '../core/ports.js';
import { createLogger, logDestination, type LogFormat, type LogLevel } from '../observe/logger.js';
import { OperatorMetrics } from '../observe/metrics.js';
import type { ResourceMetricsDetail } from '../observe/resource-metrics.js';
import { residentBytesOf } from '../observe/process-memory.js';
import { startServers, type Servers } from '../observe/servers.js';
import type { AnsibleRunOptions, BindAddress } from './args.js';
import { ExitCode } from '../lib/exit-codes.js';
import { DEFAULT_SEAL_KEY_SECRET, loadSealKey, SealKeyError } from '../helm/seal-key.js';
import { adoptReleases } from './adopt.js';
import { resolveOperatorNamespace } from './operator-namespace.js';
import { errorMessage } from '../lib/errors.js';
import { raiseFdLimit } from './fd-limit.js';
import { helmSlots, poolSize, setUpHelm, type OperatorHelm } from './helm-setup.js';
import { memoryLimit, memoryNeed, memoryWarning } from './memory-limit.js';
import { createApiProxy, type ApiProxy } from '../apiproxy/index.js';
import { helmGate } from '../apiproxy/helm-gate.js';
import { RecordKeys } from '../helm/record-mac.js';
import { isAnsibleEntry } from '../config/types.js';
import { startAnsibleEngine, type StartedAnsibleEngine } from './ansible-engine.js';
import { parseRunArgs } from './args.js';
import { checkShards, settingsDigest, ShardMember, type ShardSetup } from './shards.js';
import { memberName, ringNameProblem } from '../controller/sharding/names.js';
import { shardTimings } from '../controller/sharding/timings.js';

export interface RunConfig {
  readonly watchesFile: string;
  readonly reconcilePeriodMs: number;
  readonly maxConcurrentReconciles: number;
  readonly helmTimeoutMs: number;
  /** `--chart-refresh-interval`: default re-resolution period of charts from registries; 0 = once. */
  readonly chartRefreshIntervalMs?: number;
  /** `--chart-cache-dir`: the content-addressed cache of pulled charts. */
  readonly chartCacheDir?: string;
  readonly watchNamespaces: readonly string[];
  readonly helmBin: string;
  /** --helm-mode; undefined: engine, else warm, when a chartpilot-helm is found, else cli. */
  readonly helmMode?: 'warm' | 'engine' | 'cli' | undefined;
  /** --helm-workers; undefined: two warm workers per CPU, at most one per helm slot. */
  readonly helmWorkers?: number | undefined;
  /** --resource-metrics; undefined: attention (only CRs that need it have per-CR series). */
  readonly resourceMetrics?: ResourceMetricsDetail | undefined;
  readonly logLevel: LogLevel;
  /** JSON lines (default) or readable ones. */
  readonly logFormat?: LogFormat | undefined;
  /**
   * `--graceful-shutdown-timeout`: how long running helm calls and Ansible runs may take to finish
   * on shutdown. Then they are stopped: SIGTERM, SIGKILL 5 s later. The default (20 s) and the kill
   * grace stay under the pod's default grace period (30 s), so the operator, not the kubelet, ends
   * them and can still release the Lease.
   */
  readonly shutdownGraceMs: number;
  /** ansible-operator's run flags, for Ansible kinds. */
  readonly ansible?: AnsibleRunOptions | undefined;
  /** `--metrics-bind-address`; undefined = no metrics server. */
  readonly metricsBindAddress?: BindAddress | undefined;
  /** `--metrics-max-connections`; undefined = the server's default. */
  readonly metricsMaxConnections?: number | undefined;
  /** `--metrics-secure` (with `--metrics-require-rbac`, `--metrics-cert-path`, `--enable-http2`); undefined = plain HTTP. */
  readonly metricsSecurity?:
    | { readonly certificateFiles: CertificateFiles | undefined; readonly http2: boolean; readonly requireRbac: boolean }
    | undefined;
  /** `--health-probe-bind-address`; undefined = no probe server. */
  readonly healthProbeBindAddress?: BindAddress | undefined;
  /**
   * `--leader-election-namespace` as given ('' or undefined = not): outside a pod it also names
   * the operator's namespace, where its seal key is (operator-namespace.ts).
   */
  readonly leaderElectionNamespace?: string | undefined;
  /** `--leader-elect`: the Lease's name and namespace ('' = derive / detect); undefined = every replica acts. */
  readonly leaderElection?: { readonly id: string; readonly namespace: string } | undefined;
  /** operator-sdk `--suppress-override-values`: no OverrideValuesInUse Warning events. */
  readonly suppressOverrideValues?: boolean;
  /** `--stall-after-failures`; default 5, 0 = never. */
  readonly stallAfterFailures?: number;
  /** `--default-service-account`: what entries without `serviceAccount` run as; undefined = the operator. */
  readonly defaultServiceAccount?: string | undefined;
  /** `--seal-key-secret`: the master seal key's Secret, in the operator's namespace. */
  readonly sealKeySecret?: string;
  /** `--adopt-existing-releases`: adopt, once at start, what `chartpilot adopt` would. */
  readonly adoptExistingReleases?: boolean;
  /** operator-sdk flags that were given but change nothing here; logged once. */
  readonly ignoredFlags?: readonly string[];
  /** For helm_operator_build_info. */
  readonly version?: string;
  /**
   * `--shards`: the replicas share the CRs in a ring named by the leader election Lease
   * (`leaderElection` is then set too); undefined = one leader (or every replica, without it) acts.
   */
  readonly shards?: { readonly leaseDurationMs: number } | undefined;
}

export interface RunIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stderr: (line: string) => void;
  /** Aborted → graceful shutdown (the CLI wires SIGTERM/SIGINT to it). */
  readonly stop: AbortSignal;
}

/** Helm keeps this many revisions per release; bounded so failure loops cannot pile up Secrets. */
const HISTORY_MAX = 10;

export async function runOperator(config: RunConfig, io: RunIo, logger?: Logger): Promise<number> {
  const log = logger ?? createLogger(config.logLevel, await logDestination(config.logFormat ?? 'json'));
  await raiseFdLimit({ log });
  if (config.ignoredFlags !== undefined && config.ignoredFlags.length > 0) {
    log.warn({ flags: config.ignoredFlags }, 'flags accepted for operator-sdk compatibility have no effect in chartpilot');
  }

  const loaded = await loadWatches(config.watchesFile, io.env);
  if (!loaded.ok) {
    for (const p of loaded.problems) io.stderr(`error: ${p}`);
    return ExitCode.badConfig;
  }
  if (loaded.entries.length === 0) {
    io.stderr(`error: ${config.watchesFile} has no entries; add one mapping a kind to a chart`);
    return ExitCode.badConfig;
  }

  let lease: LeaseLocation | undefined;
  if (config.leaderElection !== undefined) {
    const resolved = resolveLeaseLocation(config.leaderElection, loaded.entries, io.env);
    if (!resolved.ok) {
      io.stderr(`error: ${resolved.problem}`);
      return ExitCode.badConfig;
    }
    lease = resolved.lease;
  }
  // Before anything starts: a seal key written where nobody meant it to be would be worse than none.
  const operatorNamespace = resolveOperatorNamespace({ name: '--leader-election-namespace', value: config.leaderElectionNamespace ?? config.leaderElection?.namespace ?? '' }, io.env);
  if (!operatorNamespace.ok) {
    io.stderr(`error: ${operatorNamespace.problem}`);
    return ExitCode.environment;
  }
  let shards: ShardSetup | undefined;
  if (config.shards !== undefined && lease !== undefined) {
    const member = memberName(io.env);
    const ringProblem = ringNameProblem(lease.name);
    if (ringProblem !== undefined || !member.ok) {
      io.stderr(`error: ${ringProblem ?? (member.ok ? '' : member.problem)}`);
      return ExitCode.badConfig;
    }
    shards = { ring: lease.name, namespace: lease.namespace, member: member.name, timings: shardTimings(config.shards.leaseDurationMs), version: config.version ?? 'unknown' };
  }

  const metrics = new OperatorMetrics({ build: { version: config.version ?? 'unknown' }, resourceDetail: config.resourceMetrics });
  let kubeConfig;
  try {
    kubeConfig = loadKubeConfig();
  } catch (err) {
    io.stderr(`error: ${errorMessage(err)}`);
    return ExitCode.environment;
  }
  const client = createKubeClient(kubeConfig, {
    userAgent: 'chartpilot',
    onRequest: (method, _path, status, ms) => {
      metrics.kubeRequest(method, status, ms);
    },
  });
  // Not ready until this replica knows its role; a standby is ready (controller-runtime: readiness
  // does not depend on leadership), a leader once every informer has synced.
  let ready: () => CheckResult = () => 'starting: checking the cluster';
  let servers: Servers;
  const security = config.metricsSecurity;
  try {
    servers = await startServers({
      metrics,
      metricsAddress: config.metricsBindAddress,
      metricsMaxConnections: config.metricsMaxConnections,
      metricsSecurity:
        security === undefined
          ? undefined
          : {
              certificateFiles: security.certificateFiles,
              http2: security.http2,
              auth: security.requireRbac ? new ScrapeAuthorizer({ reviewer: kubeReviewer(client), log }) : undefined,
            },
      healthAddress: config.healthProbeBindAddress,
      ready: () => ready(),
      log,
    });
  } catch (err) {
    if (err instanceof ListenError) {
      io.stderr(`error: ${err.message}; choose another address (0 disables the server)`);
      return ExitCode.environment;
    }
    if (err instanceof CertificateError) {
      io.stderr(`error: ${err.message}`);
      return ExitCode.environment;
    }
    throw err;
  }
  // A standby waits on unref'd timers only (so may a leader with probes disabled, between watch
  // connections): this holds the process up until it is told to stop.
  const keepAlive = setInterval(() => undefined, 3_600_000);
  try {
    return await operate(config, io, log, {
      loaded: loaded.entries,
      operatorNamespace: { namespace: operatorNamespace.namespace, source: operatorNamespace.source },
      lease,
      shards,
      metrics,
      client,
      server: kubeConfig.server,
      setReady: (check) => (ready = check),
    });
  } finally {
    clearInterval(keepAlive);
    await servers.close();
  }
}

interface Operation {
  readonly loaded: readonly WatchEntry[];
  /** Where the seal key is and chartPullSecrets are read, and what said so. */
  readonly operatorNamespace: { readonly namespace: string; readonly source: string };
  readonly lease: LeaseLocation | undefined;
  readonly shards: ShardSetup | undefined;
  readonly metrics: OperatorMetrics;
  readonly client: KubeClient;
  /** The API server's URL, for messages. */
  readonly server: string;
  readonly setReady: (check: () => CheckResult) => void;
}

/**
 * Everything between the probe servers coming up and going down again, inside the confining API
 * layer's lifetime: every helm call and Ansible run reaches the API server only through it.
 */
async function operate(config: RunConfig, io: RunIo, log: Logger, op: Operation): Promise<number> {
  // ansible-operator's --proxy-port where there are Ansible kinds (roles may expect it); otherwise any free port.
  const port = op.loaded.some(isAnsibleEntry) ? (config.ansible ?? defaultAnsibleOptions()).proxyPort : 0;
  const proxy = createApiProxy({ client: op.client, log: log.child({ component: 'api-proxy' }), port });
  try {
    await proxy.start();
  } catch (err) {
    io.stderr(`error: cannot start the API proxy helm and Ansible runs talk through on 127.0.0.1:${String(port)}: ${errorMessage(err)}; choose another --proxy-port (0 picks a free one)`);
    return ExitCode.environment;
  }
  try {
    return await operateThrough(proxy, config, io, log, op);
  } finally {
    await proxy.stop();
  }
}

async function operateThrough(proxy: ApiProxy, config: RunConfig, io: RunIo, log: Logger, op: Operation): Promise<number> {
  const { metrics, lease, client, server } = op;
  // Read as this process comes up, before it stands by or joins a ring: a lock written while it
  // stood by may be a live leader's (or anyone's) helm, so only one older than the process itself
  // counts as a crashed predecessor's.
  const serverAtStart = await serverTimes(client, config.watchNamespaces, log);
  // Set once the seal key is loaded, before any helm call that acts on a release.
  let recordKeys: RecordKeys | undefined;
  const keys = (): RecordKeys => {
    if (recordKeys === undefined) throw new Error('a helm call acted on a release before the seal key was loaded');
    return recordKeys;
  };
  const gate = helmGate(proxy, keys, log.child({ component: 'api-proxy' }));
  // `helm` (HELM_BIN unset) is looked for: PATH, else the helm the project installs; warm when it can be.
  let operatorHelm: OperatorHelm;
  try {
    operatorHelm = await setUpHelm({
      gate,
      recordKeys: keys,
      helmBin: config.helmBin,
      helmMode: config.helmMode,
      helmWorkers: config.helmWorkers,
      env: io.env,
      entries: op.loaded,
      defaultConcurrency: config.maxConcurrentReconciles,
      log,
      onCall: (event) => {
        metrics.helmCall(event);
      },
    });
    const engineStats = operatorHelm.engineStats;
    if (engineStats !== undefined) metrics.helmEngine(engineStats, residentBytesOf);
  } catch (err) {
    if (!(err instanceof PreflightError)) throw err;
    for (const p of err.problems) io.stderr(`error: ${p}`);
    return ExitCode.environment;
  }
  const helm = operatorHelm.client;
  const helmBin = operatorHelm.bin;

  let resources;
  // Only with an Ansible kind: the runtime found, the runs' API proxy and osdk_metric listening.
  let ansible: StartedAnsibleEngine | undefined;
  const startAnsible = (): Promise<StartedAnsibleEngine> =>
    startAnsibleEngine({
      options: config.ansible ?? defaultAnsibleOptions(),
      client,
      log,
      env: io.env,
      registry: metrics.registry,
      reservedMetricNames: metrics.ownTextFamilies,
      proxy,
      onRun: (gvk, run) => {
        metrics.ansibleRun(gvk, run);
      },
    });
  // A hot reload adding the first Ansible kind starts the engine then (once; a failure is that entry's).
  let starting: Promise<StartedAnsibleEngine> | undefined;
  const ansibleEngine = async (): Promise<AnsibleEngine> => {
    if (ansible !== undefined) return ansible.engine;
    starting ??= startAnsible().then(
      (started) => (ansible = started),
      (err: unknown) => {
        starting = undefined;
        throw err instanceof PreflightError ? new Error(err.problems.join('; ')) : err;
      },
    );
    return (await starting).engine;
  };
  try {
    const version = await checkApiServer(client, server);
    log.info({ server, version }, 'connected to the API server');
    // WATCH_NAMESPACE decides what the operator sees; say it at once (an empty one is every namespace).
    log.info(
      { namespaces: config.watchNamespaces.length === 0 ? 'all' : config.watchNamespaces, kinds: op.loaded.map((e) => `${e.kind}.${e.group}`) },
      config.watchNamespaces.length === 0 ? 'watching every namespace (WATCH_NAMESPACE is empty)' : `watching namespaces ${config.watchNamespaces.join(', ')} (WATCH_NAMESPACE)`,
    );
    resources = await resolveResources(client, op.loaded);
    const tenants = config.defaultServiceAccount;
    await checkPermissions(client, [
      ...requiredChecks([...resources.values()], config.watchNamespaces, !allImpersonate(op.loaded, tenants)),
      ...impersonationChecks(op.loaded, tenants, config.watchNamespaces),
    ]);
    if (config.metricsSecurity?.requireRbac === true) await checkPermissions(client, SCRAPE_REVIEW_CHECKS);
    await warnUnconfinedCharts(op.loaded, tenants, log);
    if (op.shards !== undefined) await checkShards(client, op.shards, [...resources.values()], config.watchNamespaces);
    if (lease !== undefined) {
      await checkPermissions(
        client,
        ['get', 'create', 'update'].map((verb) => ({ verb, group: 'coordination.k8s.io', resource: 'leases', namespace: lease.namespace })),
      );
      await new KubeLeaseStore({ client, ...lease }).checkWritable().catch((err: unknown) => {
        throw new PreflightError([
          `cannot create the leader election Lease ${lease.namespace}/${lease.name}: ${errorMessage(err)}; ` +
            'create that namespace or point --leader-election-namespace at an existing one',
        ]);
      });
    }
    const sealKeyAt = { namespace: op.operatorNamespace.namespace, name: config.sealKeySecret ?? DEFAULT_SEAL_KEY_SECRET };
    const sealKey = await loadSealKey(client, sealKeyAt).catch((err: unknown) => {
      throw err instanceof SealKeyError ? new PreflightError([err.message]) : err;
    });
    recordKeys = new RecordKeys(sealKey.key);
    log.info({ secret: `${sealKeyAt.namespace}/${sealKeyAt.name}`, namespaceFrom: op.operatorNamespace.source, created: sealKey.created }, 'seal key loaded');
    const helmVersion = await helm.version(30_000).catch((err: unknown) => {
      throw new PreflightError([
        `cannot run helm (${helmBin}): ${errorMessage(err)}; install helm or set HELM_BIN`,
      ]);
    });
    log.info({ helm: helmVersion, bin: helmBin, source: operatorHelm.source, mode: operatorHelm.mode }, 'helm found');
    // operator-sdk's scaffold limits the manager to 128Mi: said once at start, not found out by an OOM kill.
    const slots = helmSlots(op.loaded, config.maxConcurrentReconciles);
    const helmProcesses = operatorHelm.mode === 'engine' ? 1 : operatorHelm.mode === 'warm' ? poolSize(op.loaded, config.maxConcurrentReconciles, config.helmWorkers) : slots;
    const need = memoryNeed(helmProcesses);
    const limitBytes = await memoryLimit();
    const tooLittle = memoryWarning(limitBytes, need);
    if (tooLittle !== undefined) log.warn({ limitMiB: Math.floor((limitBytes ?? 0) / 1048576), needMiB: need.mib, helmProcesses: need.helmProcesses }, tooLittle);
    if (op.loaded.some(isAnsibleEntry)) ansible = await startAnsible();
  } catch (err) {
    await ansible?.close();
    await operatorHelm.close();
    if (err instanceof PreflightError) {
      for (const p of err.problems) io.stderr(`error: ${p}`);
      return ExitCode.environment;
    }
    throw err;
  }

  // Install and upgrade calls carry a call id; the ones a stop stops are handed to the next leader.
  const stoppedCalls = new StoppedCalls();
  // Aborted on SIGTERM/SIGINT, and when leadership is lost (`lost` aborted too).
  const done = new AbortController();
  const lost = new AbortController();
  const onStop = (): void => {
    done.abort();
  };
  io.stop.addEventListener('abort', onStop, { once: true });
  if (io.stop.aborted) done.abort();
  let elector: LeaderElector | undefined;
  let member: ShardMember | undefined;
  // Set once the manager runs: a ring member that went away makes every CR look again at its locks.
  let onMemberGone = (): void => undefined;
  // Set once the manager runs: the dependent watches follow this replica's share of the ring.
  let onViewChanged = (): void => undefined;
  if (op.shards !== undefined) {
    const setup = op.shards;
    member = new ShardMember({
      client,
      setup,
      settings: settingsDigest(op.loaded, setup.timings),
      kinds: [...resources].map(([entry, resource]) => ({ resource, labelSelector: entry.labelSelector })),
      namespaces: config.watchNamespaces,
      stoppedCalls,
      log,
      onLost: () => {
        lost.abort();
        done.abort();
      },
      onMemberGone: () => {
        onMemberGone();
      },
      onViewChanged: () => {
        onViewChanged();
      },
      onSharder: (sharder) => {
        metrics.leader(setup.ring, sharder);
      },
    });
    op.setReady(() => true);
    if (!(await member.join(done.signal))) {
      await member.close();
      io.stop.removeEventListener('abort', onStop);
      await helm.close();
      await ansible?.close();
      log.info('stopped before joining the shard ring');
      return ExitCode.ok;
    }
  } else if (lease !== undefined) {
    elector = new LeaderElector({
      store: new KubeLeaseStore({ client, ...lease }),
      identity: newIdentity(),
      log,
      onLeadership: (leader) => {
        metrics.leader(lease.name, leader);
      },
      onLost: () => {
        lost.abort();
        done.abort();
      },
    });
    op.setReady(() => true);
    if (!(await elector.acquire(done.signal))) {
      await elector.release();
      io.stop.removeEventListener('abort', onStop);
      await operatorHelm.close();
      await ansible?.close();
      log.info('stopped while standing by');
      return ExitCode.ok;
    }
    // Locks left by the helm calls the leader before this one stopped are nobody's: plan.ts clears them at once.
    const inherited = parseHandOverNote(elector.handOver);
    stoppedCalls.adopt(inherited);
    if (inherited.length > 0) log.info({ stoppedHelmCalls: inherited.length }, 'the previous leader stopped helm calls on its way out; their release locks will be cleared at once');
  }

  const events = new EventRecorder({ client, log });
  const charts = new ChartResolver({
    cache: new ChartCache(config.chartCacheDir ?? join(tmpdir(), 'chartpilot-charts')),
    readSecret: kubeSecretReader(client),
    secretNamespace: op.operatorNamespace.namespace,
    env: io.env,
    onRequest: (method, url, status) => {
      metrics.registryRequest(method, status);
      log.debug({ method, url, status }, 'registry request');
    },
  });
  if (config.adoptExistingReleases === true) {
    // Before any controller looks at them, so adopted releases never show as foreign. A failure
    // here stops nothing: those CRs say ForeignReleaseRecord, and `chartpilot adopt` can follow.
    try {
      const tally = await adoptReleases({
        client,
        recordKeys,
        entries: resources,
        namespaces: config.watchNamespaces,
        dryRun: false,
        report: (line) => {
          log.info({ record: line }, 'adopt-existing-releases');
        },
      });
      log.info(tally, 'adopt-existing-releases: done');
    } catch (err) {
      log.error({ err: errorMessage(err) }, 'adopt-existing-releases failed; releases not adopted stay untouched (run chartpilot adopt)');
    }
  }
  const manager = new Manager({
    client,
    recordKeys,
    helm,
    events,
    log,
    watchNamespaces: config.watchNamespaces,
    operatorNamespace: op.operatorNamespace.namespace,
    defaultReconcilePeriodMs: config.reconcilePeriodMs,
    defaultConcurrency: config.maxConcurrentReconciles,
    helmTimeoutMs: config.helmTimeoutMs,
    historyMax: HISTORY_MAX,
    server: serverAtStart,
    stoppedCalls,
    suppressOverrideValues: config.suppressOverrideValues ?? false,
    stallAfterFailures: config.stallAfterFailures,
    defaultServiceAccount: config.defaultServiceAccount,
    charts: { resolver: charts, defaultRefreshIntervalMs: config.chartRefreshIntervalMs ?? 600_000 },
    ansible: ansibleEngine,
    ...(member === undefined
      ? {}
      : {
          shard: {
            selector: member.selector,
            hooks: (resource) => member.hooks(resource),
            dependents: { selection: member.dependentSelection(), swapDelays: member.dependentSwapDelays },
          },
        }),
    queueMetrics: (controller) => {
      metrics.registerController(controller);
      return metrics.queueMetrics(controller);
    },
    onReconciled: (controller, result, ms) => {
      metrics.reconciled(controller, result, ms);
    },
    onDriftRepaired: (resource, cr, objectKind) => {
      metrics.driftRepaired({ kind: resource.kind, namespace: cr.metadata.namespace ?? '', name: cr.metadata.name }, objectKind);
    },
    onResource: (resource, change, obj) => {
      const r = { group: resource.group, version: resource.version, kind: resource.kind, namespace: obj.metadata.namespace, name: obj.metadata.name, createdAt: obj.metadata.creationTimestamp };
      if (change === 'gone') {
        metrics.resourceGone(r);
        return;
      }
      metrics.resourcePresent(r);
      metrics.resourceStatus({ kind: r.kind, namespace: r.namespace ?? '', name: r.name }, obj.status);
    },
  });
  const reportConcurrency = (): void => {
    for (const e of manager.entries()) metrics.maxConcurrentReconciles(e.kind.toLowerCase(), e.maxConcurrentReconciles ?? config.maxConcurrentReconciles);
    // A reload that adds, removes or resizes kinds changes the helm slots, and the warm pool with them.
    operatorHelm.fit(manager.entries());
  };
  for (const [entry, resource] of resources) await manager.add(entry, resource);
  reportConcurrency();
  metrics.dependentCaches(() => manager.dependentStats());
  metrics.releaseKeeper(() => manager.keptReleases());
  if (member !== undefined && op.shards !== undefined) {
    const m = member;
    onMemberGone = () => {
      for (const c of manager.controllers()) c.enqueueAll();
    };
    onViewChanged = () => {
      manager.selectDependents(m.dependentSelection());
    };
    // A change between the manager's start and now (select ignores an unchanged share).
    onViewChanged();
    metrics.shardRing(
      op.shards.ring,
      op.shards.member,
      () => manager.controllers().reduce((n, c) => n + c.size, 0),
      () => m.liveMembers(),
    );
  }
  op.setReady(() => (manager.hasSynced() ? true : 'informers have not synced yet'));
  // Edits to watches.yaml or a chart apply without a restart; a bad edit keeps what runs.
  const reloader = new ConfigReloader({
    watchesFile: config.watchesFile,
    env: io.env,
    manager,
    log,
    resolve: (entries) => resolveResources(client, entries),
    // A restarted kind drains as a stop does; a removed one stops its helm calls at once.
    drainTimeoutMs: config.shutdownGraceMs,
    onResult: reportConcurrency,
  });
  reloader.start();

  await whenAborted(done.signal);
  io.stop.removeEventListener('abort', onStop);
  const exitOnLoss = (): number => {
    // Another replica may lead within seconds: stop acting now rather than drain (as
    // controller-runtime does), and exit so this pod restarts as a standby.
    log.error(
      { lease: `${lease?.namespace ?? ''}/${lease?.name ?? ''}`, member: op.shards?.member },
      member === undefined ? 'leader election lost: exiting without waiting for running work' : 'shard ring: could not renew this replica\'s Lease in time; exiting without waiting for running work',
    );
    void reloader.stop().catch(() => undefined);
    void manager.stop(0).catch(() => undefined);
    void charts.close().catch(() => undefined);
    void operatorHelm.close().catch(() => undefined);
    void ansible?.close().catch(() => undefined);
    return ExitCode.internal;
  };
  if (lost.signal.aborted) return exitOnLoss();
  log.info({ graceMs: config.shutdownGraceMs }, 'shutting down: letting running helm calls finish, then stopping them');
  // Shards: the sharder gives this replica nothing more, and every CR is handed back as soon as
  // nothing runs for it here (at once for idle ones), so the others take them now.
  let handedOver: Promise<void> = Promise.resolve();
  if (member !== undefined) {
    await member.leave();
    handedOver = manager.handOver();
  }
  await reloader.stop();
  // The lease is renewed while running work drains; should that fail, draining is over too.
  const drained = await Promise.race([manager.stop(config.shutdownGraceMs).then(() => true), whenAborted(lost.signal).then(() => false)]);
  if (!drained) return exitOnLoss();
  await handedOver;
  await charts.close();
  await events.flush();
  await operatorHelm.close();
  await ansible?.close();
  // Only now, with no helm call left running, may another replica take over; the note tells it
  // which calls were stopped, so it clears their locks at once instead of waiting them out.
  const stopped = stoppedCalls.list();
  if (stopped.length > 0) log.info({ stoppedHelmCalls: stopped.length }, 'stopped running helm calls; the next owner clears any lock they left');
  await elector?.release(handOverNote(stopped));
  await member?.close();
  log.info('stopped');
  return ExitCode.ok;
}

function whenAborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => { resolve(); }, { once: true });
  });
}

/** ansible-operator's run flags at their defaults (a RunConfig built without them, as tests do). */
function defaultAnsibleOptions(): AnsibleRunOptions {
  const parsed = parseRunArgs([], {});
  if (!parsed.ok) throw new Error('the default flags do not parse');
  return parsed.options.ansible;
}

/**
 * The API server's clocks as this process starts (before it stands by for leadership), for the lock rule (engines/helm/plan.ts).
 * Without an answer the host's clock stands in and no lock counts as a predecessor's: a crashed
 * predecessor's locks are then freed only once no helm call could still hold them.
 */
async function serverTimes(client: KubeClient, namespaces: readonly string[], log: Logger): Promise<ServerTimes> {
  try {
    const start = await readServerStart(client, namespaces[0]);
    const skewMs = Date.now() - start.clock.now();
    if (Math.abs(skewMs) > 2000) log.warn({ skewMs }, "this host's clock is off the API server's; release locks are judged on the server's");
    return { clock: start.clock, startedAtRevision: start.resourceVersion };
  } catch (err) {
    log.warn({ err: errorMessage(err) }, "could not read the API server's clock; release locks left by a crash are freed once stale");
    return { clock: { now: () => Date.now() }, startedAtRevision: undefined };
  }
}
