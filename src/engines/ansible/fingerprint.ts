/**
 * The fingerprint of everything an Ansible run of one custom resource depends on. Recorded on the
 * CR after a run that succeeded; a reconcile whose fingerprint equals the recorded one runs
 * nothing. This is what lets a restarted operator with converged CRs run 0 playbooks, where
 * ansible-operator re-runs every CR on every start and every resync.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../lib/json.js';
import type { ValuesFromSettings } from '../../core/values-from.js';

/** What the kind's watches entry and the operator's flags contribute (the same for every CR of the kind). */
export interface KindInputs {
  /** Content digest of the role directory or playbook (and of the finalizer's, when it has its own). */
  readonly runnableDigest: string;
  readonly finalizerDigest: string | undefined;
  /** The entry's `vars` and `finalizer` (name and vars) as written. */
  readonly vars: Readonly<Record<string, unknown>>;
  readonly finalizer: { readonly name: string; readonly vars: Readonly<Record<string, unknown>> } | undefined;
  /** Entry settings that change what a run does or may do. */
  readonly snakeCaseParameters: boolean;
  readonly markUnsafe: boolean;
  readonly allowClusterScoped: boolean;
  readonly allowCrossNamespace: boolean;
  readonly serviceAccount: string | undefined;
  /** Operator flags that change what a run does: roles and collections paths, ansible args, owner references. */
  readonly rolesPath: readonly string[];
  readonly collectionsPath: readonly string[];
  readonly ansibleArgs: readonly string[];
  readonly injectOwnerRef: boolean;
  /** The entry's valuesFrom (absent without it, so fingerprints from before it stay). */
  readonly valuesFrom?: ValuesFromSettings | undefined;
}

export interface FingerprintInput {
  /** sha256 of the spec's canonical JSON (the cache's spec summary: no read needed). */
  readonly specDigest: string;
  /** The CR's annotations when the entry has `watchAnnotationsChanges`; undefined otherwise. */
  readonly annotations: Readonly<Record<string, string>> | undefined;
  readonly kind: KindInputs;
  /** With the entry's valuesFrom: the digest of exactly the referenced keys (core/values-from.ts); undefined otherwise. */
  readonly referenced?: string | undefined;
}

/**
 * Annotations that never change what a run does, so they do not count even with
 * watchAnnotationsChanges: kubectl's copy of the last applied object (it repeats the spec, which
 * counts already), and chartpilot's own bookkeeping.
 */
const NOT_INPUTS = new Set(['kubectl.kubernetes.io/last-applied-configuration']);
const OWN_PREFIX = 'ansible.chartpilot.io/';

export function watchedAnnotations(annotations: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(annotations ?? {})) if (!NOT_INPUTS.has(k) && !k.startsWith(OWN_PREFIX)) out[k] = v;
  return out;
}

/** 40 hex characters, like the helm path's release fingerprint. */
export function runFingerprint(input: FingerprintInput): string {
  return createHash('sha256')
    .update(
      canonicalJson({
        spec: input.specDigest,
        ...(input.annotations === undefined ? {} : { annotations: watchedAnnotations(input.annotations) }),
        kind: input.kind,
        ...(input.referenced === undefined ? {} : { referenced: input.referenced }),
      }),
    )
    .digest('hex')
    .slice(0, 40);
}
