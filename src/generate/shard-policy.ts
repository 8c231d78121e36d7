/**
 * `generate deploy --shards`: a ValidatingAdmissionPolicy (Kubernetes 1.30+) that keeps the shard
 * and drain labels the operator's. The members already refuse to act on a label their ring did not
 * make (controller/sharding/guard.ts); with the policy a CR author cannot even write one, so they
 * cannot make their resources churn between replicas either.
 */

/** A watched kind, as watches.yaml names it. */
export interface GuardedKind {
  readonly group: string;
  readonly kind: string;
}

export interface ShardPolicyOptions {
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}

/**
 * The labels of the ring `generate deploy` runs (named after the operator, sharding/names.ts);
 * other rings' labels are their operators' to guard.
 */
function guardedLabels(ring: string): string[] {
  return [`shard.chartpilot.io/${ring}`, `drain.shard.chartpilot.io/${ring}`];
}

function quoteCel(text: string): string {
  return `'${text.replace(/\\/gu, '\\\\').replace(/'/gu, "\\'")}'`;
}

/** The policy and its binding; `kinds` undefined = every kind of every group (the watches file was not given). */
export function shardPolicyYaml(o: ShardPolicyOptions, kinds: readonly GuardedKind[] | undefined): string {
  const operator = `system:serviceaccount:${o.namespace}:${o.serviceAccount}`;
  const labels = guardedLabels(o.name);
  // Present in both or in neither, and the same value: unchanged.
  const unchanged = labels
    .map(quoteCel)
    .map((k) => `((${k} in variables.labels) == (${k} in variables.oldLabels) && (!(${k} in variables.labels) || variables.labels[${k}] == variables.oldLabels[${k}]))`)
    .join('\n        && ');
  const groups = kinds === undefined ? ['*'] : [...new Set(kinds.map((k) => k.group))].sort();
  const kindList = kinds === undefined ? undefined : [...new Set(kinds.map((k) => `${k.group}/${k.kind}`))].sort();
  const scope =
    kinds === undefined
      ? '# Every kind: pass --watches-file to narrow this to the watched kinds.'
      : '# The watched kinds (from the watches file).';
  const kindCondition =
    kindList === undefined
      ? ''
      : `
    - name: watched-kind
      expression: (request.kind.group + '/' + request.kind.kind) in [${kindList.map(quoteCel).join(', ')}]`;
  const message = `the labels ${labels.join(' and ')} say which replica of the operator ${o.namespace}/${o.name} acts on this resource: only its ServiceAccount ${operator} may set, change or remove them; write the resource with these labels as they are (on create: without them)`;
  return `# Only the operator writes the shard labels: a CR author who moved a resource between replicas
# would make them churn (the replicas themselves never act on a label their ring did not make).
# Needs Kubernetes 1.30+ (ValidatingAdmissionPolicy, GA).
${scope}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: ${o.name}-shard-labels
  labels:
    app.kubernetes.io/name: ${o.name}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [${groups.map((g) => JSON.stringify(g)).join(', ')}]
        apiVersions: ["*"]
        operations: [CREATE, UPDATE]
        resources: ["*"]
  matchConditions:
    - name: not-the-operator
      expression: request.userInfo.username != ${quoteCel(operator)}${kindCondition}
  variables:
    - name: labels
      expression: "has(object.metadata.labels) ? object.metadata.labels : {}"
    - name: oldLabels
      expression: "request.operation == 'UPDATE' && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}"
  validations:
    - expression: >-
        ${unchanged}
      message: ${JSON.stringify(message)}
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: ${o.name}-shard-labels
  labels:
    app.kubernetes.io/name: ${o.name}
spec:
  policyName: ${o.name}-shard-labels
  validationActions: [Deny]
`;
}
