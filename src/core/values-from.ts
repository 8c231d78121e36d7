/**
 * Values from Secrets and ConfigMaps (Flux HelmRelease's `valuesFrom` shape), opted into per
 * watches entry: without the entry's `valuesFrom`, a CR's whole spec stays its values, as in
 * operator-sdk. The types both engines share and the port they read references through; parsing
 * and merging are config/values-from.ts, reading and watching controller/referenced-values.ts.
 */
import type { PlainMap } from '../lib/json.js';
import type { Tenant } from './tenant.js';

export type ValuesSourceKind = 'Secret' | 'ConfigMap';

/** One reference: which key of which object, and where its text goes. */
export interface ValuesReference {
  readonly kind: ValuesSourceKind;
  readonly name: string;
  /** A CR's reference into another namespace (refused unless the entry allows it); undefined = the CR's own (the operator's for the entry's). */
  readonly namespace?: string | undefined;
  /** The data key (default `values.yaml`). */
  readonly valuesKey: string;
  /**
   * Where the key's text goes, as a string, in `--set` path syntax (`db.password`, `hosts[0]`);
   * undefined = the key holds YAML values, merged at the root.
   */
  readonly targetPath?: string | undefined;
  /** A missing object or key is skipped rather than holding the release back. */
  readonly optional: boolean;
}

/** A watches entry's `valuesFrom`. */
export interface ValuesFromSettings {
  /** The spec field in which CR authors list references; it is taken out of the values. undefined = CRs cannot reference. */
  readonly specField: string | undefined;
  /** CRs' references may name another namespace (Flux's --no-cross-namespace-refs=false). */
  readonly allowCrossNamespace: boolean;
  /** The platform team's references, to objects in the operator's namespace; they win over the spec. */
  readonly references: readonly ValuesReference[];
}

/** Condition reasons of references that hold a CR back. */
export const ValuesFromReasons = {
  invalid: 'ValuesReferenceInvalid',
  notFound: 'ValuesReferenceNotFound',
  forbidden: 'ValuesReferenceForbidden',
  unreadable: 'ValuesReferenceUnreadable',
} as const;

/** A spec with its references taken out. */
export type SplitSpec =
  | { readonly ok: true; readonly spec: unknown; readonly references: readonly ValuesReference[] }
  | { readonly ok: false; readonly reason: string; readonly problem: string };

/** What the references gave, read now: values under the spec (the CR's) and over it (the entry's). */
export type ReferencedValues =
  | {
      readonly ok: true;
      readonly below: PlainMap;
      readonly above: PlainMap;
      /** Digest of exactly the referenced keys' contents (memory only: it never leaves the process). */
      readonly digest: string;
      /** Only the digest: objects unchanged since they were last read were not read again, so below and above are empty. */
      readonly partial?: true | undefined;
    }
  /** `retry`: the cause may pass without any watched change (RBAC granted later): look again at the period. */
  | { readonly ok: false; readonly reason: string; readonly problem: string; readonly retry: boolean };

export interface ReferencesRead {
  /** The CR's queue key (`namespace/name`): a change of what it references re-checks it. */
  readonly key: string;
  readonly namespace: string;
  readonly references: readonly ValuesReference[];
  readonly settings: ValuesFromSettings;
  /** The CR's references are read as its tenant; the entry's as the operator. */
  readonly tenant: Tenant | undefined;
  /**
   * false: only the digest is needed (is the release current?), so an object the watch shows
   * unchanged since it was last read is not read again; its values are read when they are needed.
   */
  readonly values?: boolean | undefined;
}

/** The edge to referenced objects (controller/referenced-values.ts). */
export interface ValuesSources {
  /** The spec without `settings.specField`, and the references listed there; or what is wrong with them. */
  split(spec: unknown, settings: ValuesFromSettings): SplitSpec;
  /** Reads the CR's and the entry's references now and watches them for the CR; rejects only on errors worth a retry with backoff. */
  read(input: ReferencesRead): Promise<ReferencedValues>;
  /** The CR is gone from this replica: stop watching for it. */
  forget(key: string): void;
}
