/** What RBAC generation works from (the plan: the charts' kinds, found by rbac-plan.ts) and its options. */
import type { Document } from 'yaml';
import type { RenderedRole } from './manifest-kinds.js';
import type { ValuesFromSettings } from '../core/values-from.js';

/** A watched custom resource kind, with the resource name the API serves it under. */
export interface WatchedResource {
  readonly group: string;
  readonly kind: string;
  readonly plural: string;
  /** The ServiceAccount its CRs run as (the entry's, else the default); undefined = the operator. */
  readonly serviceAccount?: string | undefined;
  /** Served by an Ansible role or playbook (no Helm release storage). */
  readonly ansible?: boolean | undefined;
  /** The entry's valuesFrom: what its CRs and the entry itself reference. */
  readonly valuesFrom?: ValuesFromSettings | undefined;
}

/** One kind a chart (or an Ansible role's tasks) creates, resolved to its resource. */
export interface ChartObject {
  /** The chart as watches.yaml names it, for comments. */
  readonly chart: string;
  readonly group: string;
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** How the resource name was found; `guess` means nobody confirmed it. */
  readonly resolution: 'discovery' | 'table' | 'guess';
  /** false: only seen in a template file, not in any render (e.g. behind an `if`). */
  readonly rendered: boolean;
  /** From a `crds/` directory: Helm creates these once and never updates or deletes them. */
  readonly crdsDir: boolean;
  /** The watches entry lets the chart create cluster-scoped objects (`allowClusterScoped`). */
  readonly clusterScopedAllowed: boolean;
  /** Who creates it: the ServiceAccount the entry runs as, or (undefined) the operator. */
  readonly serviceAccount?: string | undefined;
  /**
   * Fewer verbs than a chart object's, for what an Ansible role's task needs (k8s_info reads,
   * k8s_status and k8s_event read and write one object), with why; undefined = all verbs.
   */
  readonly only?: { readonly verbs: readonly string[]; readonly why: string } | undefined;
}

export interface RbacPlan {
  readonly watched: readonly WatchedResource[];
  readonly objects: readonly ChartObject[];
  /** Roles and ClusterRoles the charts render: their rules must be held to create them. */
  readonly roles: readonly (RenderedRole & { readonly chart: string; readonly serviceAccount?: string | undefined })[];
  /** Roles the charts bind without rendering them: whoever creates the binding needs `bind` on them. */
  readonly boundRoles: readonly { readonly chart: string; readonly roleKind: string; readonly roleName: string; readonly serviceAccount?: string | undefined }[];
  /** Found while planning (render failures, unknown kinds). */
  readonly warnings: readonly string[];
  /** Where the plan came from, for the header (e.g. "discovery at https://…" or "built-in table"). */
  readonly resolvedBy: string;
}

export interface RbacOptions {
  /** Base of every object name: `<name>-manager`, `<name>-leader-election`, `<name>-tenant-<sa>`. */
  readonly name: string;
  /** The operator's namespace: its ServiceAccount and leader election Lease live there. */
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Grant in these namespaces only (Roles), as for WATCH_NAMESPACE; empty = cluster-wide. */
  readonly roleNamespaces: readonly string[];
  /** Also a ServiceAccount, Role and RoleBinding per ServiceAccount the charts run as, in each of these namespaces. */
  readonly tenantNamespaces?: readonly string[] | undefined;
  /** The command line that regenerates the output, for the header. */
  readonly command: string;
  /** chartPullSecret names: read in the operator's namespace (a ClusterRole covers them already). */
  readonly pullSecrets?: readonly string[];
}

export interface RbacOutput {
  readonly documents: Document[];
  readonly warnings: string[];
}
