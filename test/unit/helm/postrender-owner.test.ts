import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { injectMetadata, PostRenderRefusal } from '../../../src/helm/postrender/inject.js';
import { parsePostRenderSpec, serializePostRenderSpec } from '../../../src/helm/postrender/spec.js';
import type { PostRenderOwner, PostRenderSpec } from '../../../src/helm/types.js';

const OWNER: PostRenderOwner = {
  reference: { apiVersion: 'demo.chartpilot.io/v1alpha1', kind: 'WebApp', name: 'shop', uid: 'uid-1' },
  namespace: 'team-a',
  clusterScopedKinds: ['rbac.authorization.k8s.io/v1/ClusterRole', 'v1/Namespace'],
  namespacedKinds: ['v1/ConfigMap', 'v1/Secret', 'v1/Service', 'apps/v1/Deployment'],
  nonOwnedAnnotations: { 'operator-sdk/primary-resource': 'team-a/shop', 'operator-sdk/primary-resource-type': 'WebApp.demo.chartpilot.io' },
  allowClusterScoped: false,
  allowCrossNamespace: false,
};

function spec(owner: Partial<PostRenderOwner> = {}): PostRenderSpec {
  return { labels: { 'chartpilot.io/owner-uid': 'uid-1' }, annotations: {}, owner: { ...OWNER, ...owner } };
}

interface Rendered {
  readonly kind?: string;
  readonly metadata: {
    readonly ownerReferences?: readonly Record<string, unknown>[];
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
}

function objects(manifest: string): Rendered[] {
  return parseAllDocuments(manifest).flatMap((d) => (Array.isArray(d) ? [] : [d.toJSON() as Rendered]));
}

const SAME_NS = `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-content
`;
const OTHER_NS = `---
apiVersion: v1
kind: Service
metadata:
  name: shop
  namespace: elsewhere
`;
const CLUSTER = `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: shop-reader
`;

describe('post-render ownership', () => {
  it('gives same-namespace objects a controller ownerReference and the owner label', () => {
    const [cm] = objects(injectMetadata(SAME_NS, spec()));
    assert.ok(cm !== undefined);
    assert.deepEqual(cm.metadata.ownerReferences, [{ ...OWNER.reference, controller: true, blockOwnerDeletion: true }]);
    assert.equal(cm.metadata.labels?.['chartpilot.io/owner-uid'], 'uid-1');
    assert.equal(cm.metadata.annotations, undefined);
  });

  it('never adds a second controller reference, nor the same owner twice', () => {
    const withController = `${SAME_NS}  ownerReferences:\n    - {apiVersion: v1, kind: ConfigMap, name: other, uid: uid-x, controller: true}\n`;
    const [cm] = objects(injectMetadata(withController, spec()));
    assert.deepEqual(cm?.metadata.ownerReferences?.map((r) => r['controller']), [true, false]);
    const twice = injectMetadata(injectMetadata(SAME_NS, spec()), spec());
    assert.equal(objects(twice)[0]?.metadata.ownerReferences?.length, 1);
  });

  it('refuses cluster-scoped and other-namespace objects by default, naming each and the fix', () => {
    assert.throws(
      () => injectMetadata(SAME_NS + OTHER_NS + CLUSTER, spec()),
      (err: unknown) =>
        err instanceof PostRenderRefusal &&
        /Service shop in namespace elsewhere/.test(err.message) &&
        /cluster-scoped ClusterRole shop-reader/.test(err.message) &&
        /allowClusterScoped: true/.test(err.message) &&
        /Nothing was applied/.test(err.message),
    );
  });

  it('annotates allowed cluster-scoped and other-namespace objects instead of owning them', () => {
    const out = objects(injectMetadata(OTHER_NS + CLUSTER, spec({ allowClusterScoped: true, allowCrossNamespace: true })));
    for (const obj of out) {
      assert.equal(obj.metadata.ownerReferences, undefined, `${String(obj.kind)} must not get an ownerReference`);
      assert.equal(obj.metadata.annotations?.['operator-sdk/primary-resource'], 'team-a/shop');
      assert.equal(obj.metadata.labels?.['chartpilot.io/owner-uid'], 'uid-1');
    }
  });

  it('allowing one scope does not allow the other', () => {
    assert.throws(() => injectMetadata(CLUSTER, spec({ allowCrossNamespace: true })), PostRenderRefusal);
    assert.throws(() => injectMetadata(OTHER_NS, spec({ allowClusterScoped: true })), PostRenderRefusal);
  });

  it('round-trips the owner and the refusal file through the serialized spec', () => {
    const parsed = parsePostRenderSpec(serializePostRenderSpec(spec(), '/tmp/x/values.json.refusal'));
    assert.deepEqual(parsed.owner, OWNER);
    assert.equal(parsed.errorFile, '/tmp/x/values.json.refusal');
    assert.throws(() => parsePostRenderSpec(JSON.stringify({ labels: {}, owner: { reference: {} } })), /owner/);
  });
});

describe('post-render and helm.sh/resource-policy: keep', () => {
  it('does not own objects Helm keeps on uninstall, so the garbage collector leaves them too', () => {
    const kept = `${SAME_NS}  annotations:\n    helm.sh/resource-policy: keep\n`;
    const [cm] = objects(injectMetadata(kept, spec()));
    assert.ok(cm !== undefined);
    assert.equal(cm.metadata.ownerReferences, undefined);
    assert.equal(cm.metadata.annotations?.['operator-sdk/primary-resource'], 'team-a/shop');
  });
});
