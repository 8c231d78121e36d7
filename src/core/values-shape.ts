/** How large and how deep values may be: specs, and values read from Secrets and ConfigMaps. */

/**
 * Deepest nesting of maps and lists a spec may have. Real charts' values stay far below it (and
 * 200 levels are known to deploy); a deeper one would only be there to exhaust the stack of the
 * recursive walks after this check (merge, fingerprint, JSON for helm), which were measured to
 * handle 3000 levels: a margin of three.
 */
export const MAX_VALUES_DEPTH = 1000;
/** Largest spec, as JSON: Helm's release record (a Secret, at most 1 MiB) holds the values too. */
export const MAX_VALUES_BYTES = 1024 * 1024;

export const ValuesReasons = { tooDeep: 'ValuesTooDeep', tooLarge: 'ValuesTooLarge' } as const;

/** The problem of a spec over MAX_VALUES_BYTES (also told from the CR cache's size alone, unread). */
export function valuesTooLarge(): { readonly reason: string; readonly message: string } {
  return {
    reason: ValuesReasons.tooLarge,
    message: `spec is larger than ${String(MAX_VALUES_BYTES / 1024)} KiB as JSON; chartpilot does not process values that large (Helm's release record could not hold them): move bulk data into a ConfigMap or Secret the chart references`,
  };
}

/**
 * Why `value` cannot be processed (too deep or too large), or undefined. Iterative, so a spec
 * nested thousands of levels is measured without recursion; stops as soon as a limit is passed.
 * The size is the length of its JSON, counted without escapes (close enough for a limit).
 */
export function valuesShapeProblem(value: unknown, subject = 'spec'): { readonly reason: string; readonly message: string } | undefined {
  const stack: { readonly v: unknown; readonly depth: number }[] = [{ v: value, depth: 0 }];
  let bytes = 0;
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { v, depth } = item;
    if (typeof v === 'string') bytes += v.length + 3;
    else if (typeof v !== 'object' || v === null) bytes += String(v).length + 1;
    else {
      if (depth >= MAX_VALUES_DEPTH) {
        return {
          reason: ValuesReasons.tooDeep,
          message: `${subject} is nested more than ${String(MAX_VALUES_DEPTH)} levels deep (maps and lists); chartpilot does not process values that deep: flatten ${subject === 'spec' ? 'the spec' : 'it'}`,
        };
      }
      bytes += 2;
      if (Array.isArray(v)) for (const x of v as unknown[]) stack.push({ v: x, depth: depth + 1 });
      else {
        for (const [k, x] of Object.entries(v)) {
          bytes += k.length + 3;
          stack.push({ v: x, depth: depth + 1 });
        }
      }
    }
    if (bytes > MAX_VALUES_BYTES) return subject === 'spec' ? valuesTooLarge() : { reason: ValuesReasons.tooLarge, message: `${subject} is larger than ${String(MAX_VALUES_BYTES / 1024)} KiB as JSON; chartpilot does not process values that large` };
  }
  return undefined;
}
