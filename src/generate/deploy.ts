/**
 * The manifests that run the operator (namespace, ServiceAccount, Deployment; its metrics objects
 * are metrics.ts's), a sample CR and a kustomization. Text templates rather than objects, because
 * the comments are half the value: they tell the reader which knobs exist and why the secure
 * defaults are what they are.
 */
import { Document, parseDocument, stringify } from 'yaml';
import { packageVersion } from '../lib/package-root.js';
import { METRICS_ARGS, METRICS_PORT, METRICS_PORT_NAME } from './metrics.js';

export interface DeployOptions {
  /** Deployment and label name, e.g. `chartpilot` or `webapp-operator`. */
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly image: string;
  /**
   * Some kinds are served by Ansible roles: the Deployment runs the image with the Ansible runtime
   * (ANSIBLE_IMAGE_NAME), with its settings and more memory and /tmp for ansible-runner.
   */
  readonly ansible?: boolean | undefined;
  /**
   * `--shards <replicas>`: that many replicas share the CRs (`run --shards`, a ring named after the
   * operator) instead of one leader; undefined = one replica with leader election.
   */
  readonly shards?: number | undefined;
  /** `--monitoring-namespace`: whose pods the NetworkPolicy lets scrape; undefined = `monitoring`. */
  readonly monitoringNamespace?: string | undefined;
}

/** The health probe port (`--health-probe-bind-address=:8081`, operator-sdk's). */
export const PROBE_PORT = 8081;

export const DEFAULTS = {
  name: 'chartpilot',
  namespace: 'chartpilot-system',
  serviceAccount: 'chartpilot',
} as const;

/**
 * V8's old-space cap the Deployment sets (NODE_OPTIONS): below the container's memory limit with
 * room for helm processes, so V8 collects before the kernel kills. Sized from measurements (see
 * docs/architecture/performance.md, "Memory"): the CR cache keeps no specs, so the heap grows with the number of CRs
 * (about 1 KiB each), not with their size.
 */
export const MEMORY_NODE_OPTIONS = '--max-old-space-size=128';

/** Where the image keeps chartpilot and where application images put watches.yaml and charts. */
export const IMAGE_HOME = '/opt/chartpilot';

/**
 * The version image names and scaffolds carry. An unreadable package.json is an error, not a
 * quiet 0.0.0: a scaffold built `FROM chartpilot:0.0.0` would only fail at its image build.
 */
export { packageVersion };

/** The base image as built from this repository's Dockerfile (`docker build -t chartpilot:<v> .`). */
export function defaultImage(): string {
  return `chartpilot:${packageVersion()}`;
}

/**
 * The image variant with the Ansible runtime (Python venv with ansible-core, ansible-runner,
 * kubernetes.core and operator_sdk.util), built by `npm run image` next to the plain one.
 */
export const ANSIBLE_IMAGE_NAME = 'chartpilot-ansible';

/** The Ansible variant's reference for this version, what Ansible projects build FROM. */
export function defaultAnsibleImage(): string {
  return `${ANSIBLE_IMAGE_NAME}:${packageVersion()}`;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/u;

/** Problems with names that end up as Kubernetes object names. */
export function deployOptionProblems(o: Partial<DeployOptions>): string[] {
  const problems: string[] = [];
  const check = (flag: string, v: string | undefined, max: number): void => {
    if (v !== undefined && (v.length > max || !DNS1123_LABEL.test(v))) {
      problems.push(`--${flag} "${v}" must be a lower-case DNS label (letters, digits, '-'; at most ${String(max)} characters)`);
    }
  };
  check('namespace', o.namespace, 63);
  check('monitoring-namespace', o.monitoringNamespace, 63);
  check('service-account', o.serviceAccount, 63);
  // Object names get suffixes (-manager, -leader-election, -metrics-service): keep room for them.
  check('name', o.name, 40);
  // It also names the metrics Service, and Service names must start with a letter (DNS-1035).
  if (o.name !== undefined && DNS1123_LABEL.test(o.name) && !/^[a-z]/u.test(o.name)) {
    problems.push(`--name "${o.name}" must start with a letter: it names the metrics Service`);
  }
  if (o.image !== undefined && (o.image === '' || /\s/u.test(o.image))) problems.push(`--image "${o.image}" is not an image reference`);
  return problems;
}

export function namespaceYaml(o: DeployOptions): string {
  return `# The operator's own namespace: its Deployment, ServiceAccount and leader election Lease.
apiVersion: v1
kind: Namespace
metadata:
  name: ${o.namespace}
  labels:
    app.kubernetes.io/name: ${o.name}
    # The operator runs as non-root with no capabilities: the restricted profile fits.
    pod-security.kubernetes.io/enforce: restricted
`;
}

export function serviceAccountYaml(o: DeployOptions): string {
  return `# The identity the operator acts as; rbac.yaml grants it exactly what the charts need.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ${o.serviceAccount}
  namespace: ${o.namespace}
  labels:
    app.kubernetes.io/name: ${o.name}
`;
}

/** What differs in the Deployment when Ansible roles run in it. */
function runtimeParts(o: DeployOptions): { concurrency: string; env: string; resources: string; tmp: string } {
  if (o.ansible !== true) {
    return {
      concurrency: '            # Every reconcile may run a helm process (~50-100 MiB): bound them to fit the memory limit.',
      env: '',
      resources: `          # Measured (chartpilot's docs/guides/tenancy.md, "Memory"): the operator peaks at about
          # 160 MiB under its 128 MiB heap, each helm process at about 70 MiB (2 at once here).
          resources:
            requests:
              cpu: 100m
              memory: 256Mi
            limits:
              memory: 384Mi`,
      tmp: `        # Values files, the post-render plugin and helm's caches: small and disposable.
        - name: tmp
          emptyDir:
            sizeLimit: 256Mi`,
    };
  }
  return {
    concurrency: '            # Every reconcile may run a helm process or ansible-runner (a Python process of its own): bound them.',
    env: `            # As operator-sdk's Ansible scaffold: no fact gathering unless a play asks (it costs a
            # second or so per run and the roles act on the API, not on this container).
            - name: ANSIBLE_GATHERING
              value: explicit
`,
    resources: `          # Ansible kinds: operator-sdk's Ansible scaffold's limit (768Mi), since each run is a Python
          # process of its own next to the operator; lower it once you have measured your roles.
          resources:
            requests:
              cpu: 100m
              memory: 256Mi
            limits:
              memory: 768Mi`,
    tmp: `        # helm's caches, and for Ansible runs their private input and artifact directories and
        # kubernetes.core's API discovery cache (it writes to $TMPDIR): /tmp must stay writable.
        - name: tmp
          emptyDir:
            sizeLimit: 1Gi`,
  };
}

/** The Deployment's head comment, replica count and the args and env that choose leader election or shards. */
function scaleParts(o: DeployOptions): { comment: string; replicas: string; args: string; env: string } {
  if (o.shards === undefined) {
    return {
      comment: `# The operator. One replica is enough (it recovers its work from the cluster on restart); with
# more, --leader-elect makes only one act at a time.`,
      replicas: '1',
      args: '            - --leader-elect',
      env: '',
    };
  }
  return {
    comment: `# The operator, sharded: every replica acts on its share of the resources (the label
# shard.chartpilot.io/${o.name} on each says whose; \`kubectl get <kind> -L shard.chartpilot.io/${o.name}\`).
# Scale by changing replicas: a new replica takes about 1/N, a stopped one hands its share over at
# once, a crashed one's share moves after two --shard-lease-duration (15 s). Every replica must run
# the same image and flags; shards.yaml grants the ring's Leases.`,
    replicas: String(o.shards),
    args: `            # A ring of Leases named by --leader-election-id; its leader Lease elects the sharder.
            - --shards
            - --leader-election-id=${o.name}`,
    env: `            # The replica's name in the ring (and in the shard labels).
            - name: POD_NAME
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
`,
  };
}

/** `--shards`: the Role for the ring's Leases (a member's own, the others' it watches, the dead it removes). */
export function shardsRbacYaml(o: DeployOptions): string {
  return `# With --shards every replica holds a Lease of its own in the ring, watches the others', and the
# sharder removes the Lease of a replica gone for good. (Patching the resources' labels is in
# rbac.yaml's patch on the watched kinds.)
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: ${o.name}-shards
  namespace: ${o.namespace}
  labels:
    app.kubernetes.io/name: ${o.name}
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, list, watch, create, update, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: ${o.name}-shards
  namespace: ${o.namespace}
  labels:
    app.kubernetes.io/name: ${o.name}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: ${o.name}-shards
subjects:
  - kind: ServiceAccount
    name: ${o.serviceAccount}
    namespace: ${o.namespace}
`;
}

export function operatorYaml(o: DeployOptions): string {
  const parts = runtimeParts(o);
  const scale = scaleParts(o);
  return `${scale.comment}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${o.name}
  namespace: ${o.namespace}
  labels:
    app.kubernetes.io/name: ${o.name}
    app.kubernetes.io/component: operator
spec:
  replicas: ${scale.replicas}
  selector:
    matchLabels:
      app.kubernetes.io/name: ${o.name}
      app.kubernetes.io/component: operator
  template:
    metadata:
      labels:
        app.kubernetes.io/name: ${o.name}
        app.kubernetes.io/component: operator
      annotations:
        kubectl.kubernetes.io/default-container: manager
    spec:
      serviceAccountName: ${o.serviceAccount}
      # chartpilot lets running helm calls finish for 25 s after SIGTERM.
      terminationGracePeriodSeconds: 30
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      containers:
        - name: manager
          # Build it with \`docker build -t ${o.image} .\`, push it to your registry and name that here.
          image: ${o.image}
          imagePullPolicy: IfNotPresent
          # Flags only, as operator-sdk's scaffold: the image's ENTRYPOINT is \`chartpilot run\`.
          args:
            - --watches-file=${IMAGE_HOME}/watches.yaml
${scale.args}
            # As operator-sdk's scaffold: /metrics over HTTPS, each scrape's token checked with a
            # TokenReview and a SubjectAccessReview (operator-metrics.yaml grants both, and says
            # who may scrape). The certificate is self-signed, made at start; to serve your own
            # (e.g. a cert-manager Secret with tls.crt and tls.key, mounted read-only), add
            # --metrics-cert-path=<the mount directory>.
${METRICS_ARGS.map((a) => `            - ${a}`).join('\n')}
            - --health-probe-bind-address=:${String(PROBE_PORT)}
${parts.concurrency}
            - --max-concurrent-reconciles=2
          env:
            # Which namespaces to act in. Empty: all namespaces (the ClusterRole of rbac.yaml).
            # A comma-separated list (e.g. "team-a,team-b") confines the operator to those; then
            # grant Roles in just those namespaces instead:
            #   chartpilot generate rbac --role-namespace team-a,team-b
            - name: WATCH_NAMESPACE
              value: ""
            # V8's heap below the memory limit, with room for helm processes beside it (see
            # chartpilot's docs/guides/tenancy.md, "Memory").
            - name: NODE_OPTIONS
              value: "${MEMORY_NODE_OPTIONS}"
            # The root filesystem is read-only: helm's cache, config and data live in /tmp.
            - name: HOME
              value: /tmp
            - name: HELM_CACHE_HOME
              value: /tmp/helm/cache
            - name: HELM_CONFIG_HOME
              value: /tmp/helm/config
            - name: HELM_DATA_HOME
              value: /tmp/helm/data
${scale.env}${parts.env}          ports:
            # The metrics Service of operator-metrics.yaml targets this port by name.
            - name: ${METRICS_PORT_NAME}
              containerPort: ${String(METRICS_PORT)}
              protocol: TCP
            - name: health
              containerPort: ${String(PROBE_PORT)}
              protocol: TCP
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            initialDelaySeconds: 15
            periodSeconds: 20
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            initialDelaySeconds: 5
            periodSeconds: 10
${parts.resources}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop:
                - ALL
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
${parts.tmp}
`;
}

/**
 * A sample CR whose spec is the chart's values.yaml, comments included, so it documents every
 * value the chart takes (operator-sdk's scaffold does the same, without the comments).
 */
export function sampleCrYaml(apiVersion: string, kind: string, name: string, valuesText: string): string {
  const values = parseDocument(valuesText, { version: '1.1' });
  const doc = new Document({ apiVersion, kind, metadata: { name } });
  const contents = values.contents;
  if (contents === null || values.errors.length > 0) {
    doc.set('spec', doc.createNode({}));
  } else {
    // Comments above the first key belong to the document in the source; keep them on spec.
    if (values.commentBefore !== null && (contents.commentBefore === undefined || contents.commentBefore === null)) {
      contents.commentBefore = values.commentBefore;
    }
    doc.set('spec', contents);
  }
  doc.commentBefore = ` A ${kind}: its spec holds the chart's values (these are the chart's defaults). Keys
 left out take the chart's defaults too; kubectl explain ${kind.toLowerCase()}.spec lists them.`;
  return doc.toString({ lineWidth: 0 });
}

/**
 * A sample CR of an Ansible kind: its spec holds the defaults of the role's argument specs under
 * the keys the CR uses (camelCase), or is empty when the role declares none.
 */
export function ansibleSampleYaml(
  apiVersion: string,
  kind: string,
  name: string,
  sample: { readonly spec: Record<string, unknown>; readonly missing: readonly string[] } | undefined,
  source: string,
): string {
  const doc = new Document({ apiVersion, kind, metadata: { name }, spec: sample?.spec ?? {} });
  const lines =
    sample === undefined
      ? [` A ${kind}: its spec holds the variables of the ${source}, which declares no argument specs (meta/argument_specs.yml),`, ' so any keys are accepted; the operator passes them to the role in snake_case.']
      : [` A ${kind}: its spec holds the variables of the ${source}; these are the defaults of its argument specs.`, ` kubectl explain ${kind.toLowerCase()}.spec lists them all.`];
  if (sample !== undefined && sample.missing.length > 0) lines.push(` Required, without a default: set ${sample.missing.join(', ')} before you apply it.`);
  doc.commentBefore = lines.join('\n');
  return doc.toString({ lineWidth: 0 });
}

export function kustomizationYaml(resources: readonly string[]): string {
  return `# \`kubectl apply -k deploy/\` installs the operator (the sample stays out: apply it once the
# CRD is established). Named Kustomization, without .yaml, so that \`kubectl apply -R -f deploy/\`
# does not take it for a resource.
${stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: [...resources] })}`;
}
