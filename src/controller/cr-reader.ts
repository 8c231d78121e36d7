/** Reads a custom resource in full (its spec) and shrinks cached ones to what the controller needs. */
import type { KubeClient } from '../kube/rest.js';
import { getObject } from '../kube/objects.js';
import type { ApiResource, KubeObject } from '../kube/types.js';
import type { CustomResource } from '../core/model.js';
import type { SpecReader } from '../engines/helm/ports.js';
import { summarizeSpec } from '../core/spec-summary.js';

export function createSpecReader(client: KubeClient, resource: ApiResource): SpecReader {
  return {
    read: (cr) => getObject<CustomResource & KubeObject>(client, { resource, namespace: cr.metadata.namespace, name: cr.metadata.name }),
  };
}

/**
 * What the CR cache keeps of an object from list or watch: everything but the spec, which becomes
 * its digest and size. Metadata and status stay whole: the controller compares them (generation,
 * finalizers, annotations, labels, conditions), and they are small and written by us or bounded by
 * the API server. The spec is the tenant's and may be megabytes.
 */
export function withoutSpec<T extends KubeObject>(obj: T): T {
  const { spec, ...rest } = obj as T & { spec?: unknown };
  return { ...rest, specSummary: summarizeSpec(spec) } as unknown as T;
}
