/**
 * Kubernetes label key/value rules (apimachinery validation.IsQualifiedName / IsValidLabelValue),
 * checked at load time so a bad selector is reported with the entry that holds it instead of
 * surfacing later as a 400 from the API server.
 */

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/u;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/u;

/** Returns why `key` is not a valid label key, or undefined when it is. */
export function labelKeyProblem(key: string): string | undefined {
  if (key === '') return 'a label key must not be empty';
  const slash = key.lastIndexOf('/');
  const name = slash === -1 ? key : key.slice(slash + 1);
  if (slash !== -1) {
    const prefix = key.slice(0, slash);
    if (prefix === '' || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) {
      return `label key "${key}" has an invalid prefix "${prefix}": it must be a lower-case DNS subdomain such as example.com`;
    }
  }
  if (name.length > 63 || !NAME.test(name)) {
    return `label key "${key}" is invalid: the name part must be at most 63 characters of letters, digits, '-', '_' or '.', starting and ending with a letter or digit`;
  }
  return undefined;
}

/** Returns why `value` is not a valid label value, or undefined when it is. */
export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63 || !NAME.test(value)) {
    return `label value "${value}" is invalid: it must be empty or at most 63 characters of letters, digits, '-', '_' or '.', starting and ending with a letter or digit`;
  }
  return undefined;
}

export function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
}

/** DNS-1123 label: what a namespace name must be. */
export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/u.test(s);
}

/** DNS-1035 label: what a CRD version name must be (starts with a letter). */
export function isDns1035Label(s: string): boolean {
  return s.length <= 63 && /^[a-z]([-a-z0-9]*[a-z0-9])?$/u.test(s);
}
