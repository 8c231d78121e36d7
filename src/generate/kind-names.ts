/**
 * The names a CRD gives its kind (plural, singular, short names). Pure, so the rules that decide
 * what a user types after `kubectl get` are unit-tested without a cluster.
 */

export interface CrdNames {
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
}

/** What the API server accepts as a kind here: a letter, then letters and digits (CamelCase). */
const KIND = /^[A-Za-z][A-Za-z0-9]*$/u;
/** DNS-1035 label: what plural, singular and short names must be. */
const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/u;

/** Why `kind` cannot name a CRD, or undefined when it can. */
export function kindProblem(kind: string): string | undefined {
  if (!KIND.test(kind)) {
    return `kind "${kind}" cannot name a CustomResourceDefinition: use letters and digits only, starting with a letter (CamelCase, e.g. WebApp)`;
  }
  if (pluralOf(kind).length > 63) return `kind "${kind}" is too long: its plural must fit in 63 characters`;
  return undefined;
}

/**
 * English plural of the lower-cased kind, the rule kubebuilder and operator-sdk apply (so a user
 * switching tools keeps the resource name): policy → policies, ingress → ingresses, box → boxes.
 */
export function pluralOf(kind: string): string {
  const k = kind.toLowerCase();
  if (/[^aeiou]y$/u.test(k)) return `${k.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/u.test(k)) return `${k}es`;
  return `${k}s`;
}

/**
 * Short names of built-in kinds and of widespread add-ons. A CRD that claims one of these makes
 * `kubectl get <short>` ambiguous (kubectl silently picks one), so they are never generated.
 */
const TAKEN_SHORT_NAMES: ReadonlySet<string> = new Set([
  // core and built-in API groups
  'cm', 'cs', 'csr', 'crd', 'crds', 'cj', 'deploy', 'ds', 'ep', 'ev', 'hpa', 'ing', 'ingclass', 'limits',
  'netpol', 'no', 'ns', 'pc', 'pdb', 'po', 'psp', 'pv', 'pvc', 'quota', 'rc', 'rs', 'sa', 'sc', 'sts', 'svc',
  'vac', 'pl', 'va',
  // common add-ons (cert-manager, Istio, Argo CD, Flux, KEDA, Prometheus operator, VPA, Gateway API)
  'app', 'apps', 'appproj', 'cert', 'certs', 'ci', 'ciss', 'cr', 'dr', 'gtw', 'gw', 'hr', 'iss', 'ks', 'pm',
  'prom', 'promrule', 'se', 'smon', 'so', 'sj', 'vpa', 'vs', 'wf', 'wftmpl', 'cwf',
]);

/**
 * Short name from the kind's capitals (WebApp → wa, DatabaseCluster → dc). None when the kind
 * has fewer than two capitals (a one-letter name is too easy to hit by accident) or the result
 * is taken: a missing short name costs a few keystrokes, a colliding one costs confusion.
 */
export function shortNameCandidate(kind: string): string | undefined {
  const initials = kind.replace(/[^A-Z]/gu, '').toLowerCase();
  if (initials.length < 2 || !DNS1035.test(initials) || TAKEN_SHORT_NAMES.has(initials)) return undefined;
  return initials;
}

/**
 * Names for several kinds generated together: a short name is dropped when two kinds would get
 * the same one, or when it equals another kind's plural or singular.
 */
export function crdNames(kinds: readonly string[]): Map<string, CrdNames> {
  const candidates = new Map<string, string | undefined>();
  const count = new Map<string, number>();
  const longNames = new Set<string>();
  for (const kind of new Set(kinds)) {
    const c = shortNameCandidate(kind);
    candidates.set(kind, c);
    if (c !== undefined) count.set(c, (count.get(c) ?? 0) + 1);
    longNames.add(pluralOf(kind));
    longNames.add(kind.toLowerCase());
  }
  const out = new Map<string, CrdNames>();
  for (const [kind, c] of candidates) {
    const usable = c !== undefined && count.get(c) === 1 && !longNames.has(c);
    out.set(kind, {
      kind,
      listKind: `${kind}List`,
      plural: pluralOf(kind),
      singular: kind.toLowerCase(),
      shortNames: usable ? [c] : [],
    });
  }
  return out;
}
