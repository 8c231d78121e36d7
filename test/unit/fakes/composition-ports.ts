/**
 * Fakes of the composition ports, so an engine's reconciler is tested without a cluster: ValuesSources
 * (core/values-from.ts) is the real pure parsing and merging of config/values-from.ts behind an
 * in-memory set of objects (entry references are read in namespace `operators`); Dependencies
 * (core/dependencies.ts) answers the verdict a test sets.
 */
import { composeReferenced, planReads, splitSpec, type FetchedObject, type PlannedRead } from '../../../src/config/values-from.js';
import type { ReferencesRead, ValuesSources } from '../../../src/core/values-from.js';
import { splitDependencies } from '../../../src/config/depends-on.js';
import type { DependencyCheck, DependencyVerdict, Dependencies } from '../../../src/core/dependencies.js';

/** Objects by `kind/namespace/name`; `forbidden` ones answer as RBAC would. */
export class FakeSources implements ValuesSources {
  readonly objects = new Map<string, Record<string, string>>();
  readonly forbidden = new Set<string>();
  readonly reads: ReferencesRead[] = [];
  readonly forgotten: string[] = [];
  split = splitSpec;
  read(input: ReferencesRead): ReturnType<ValuesSources['read']> {
    this.reads.push(input);
    const plan = planReads(input.namespace, 'operators', input.references, input.settings);
    if (!plan.ok) return Promise.resolve(plan);
    const fetched: { read: PlannedRead; object: FetchedObject }[] = [];
    for (const read of plan.reads) {
      const id = `${read.ref.kind}/${read.namespace}/${read.ref.name}`;
      if (this.forbidden.has(id)) return Promise.resolve({ ok: false, reason: 'ValuesReferenceForbidden', problem: `may not read ${id}`, retry: true });
      const data = this.objects.get(id);
      fetched.push({ read, object: data === undefined ? { found: false } : { found: true, data } });
    }
    return Promise.resolve(composeReferenced(fetched));
  }
  forget(key: string): void {
    this.forgotten.push(key);
  }
}

/** Dependencies whose verdict the test sets; remembers what it was asked. */
export class FakeDependencies implements Dependencies {
  verdict: DependencyVerdict = { kind: 'ready' };
  readonly checks: DependencyCheck[] = [];
  split = splitDependencies;
  check(input: DependencyCheck): Promise<DependencyVerdict> {
    this.checks.push(input);
    return Promise.resolve(this.verdict);
  }
  forget(): void {}
}
