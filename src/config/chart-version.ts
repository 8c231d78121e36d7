/**
 * Chart versions as Helm reads them: an exact version or a semver constraint (`^1.4`, `~1.4.2`,
 * `>=1.2 <2`, `1.x`, `>= 1.2, < 2` — Masterminds/semver's comma means "and"), prereleases only
 * when asked for, and no constraint meaning the newest stable version. OCI tags cannot hold `+`,
 * so `helm push` writes build metadata as `_`; tags are read back the same way.
 */
import semver from 'semver';

export type ConstraintResult = { ok: true; range: semver.Range | undefined } | { ok: false; reason: string };

/** Parses `chartVersion`; undefined or '' = no constraint (the newest stable version). */
export function parseConstraint(text: string | undefined): ConstraintResult {
  if (text === undefined || text.trim() === '') return { ok: true, range: undefined };
  // Masterminds/semver (Helm's) joins with ',' for "and"; node-semver with a space.
  const normalized = text.trim().replace(/\s*,\s*/gu, ' ');
  try {
    return { ok: true, range: new semver.Range(normalized, { loose: true, includePrerelease: /-/u.test(normalized) }) };
  } catch {
    return {
      ok: false,
      reason: `"${text}" is neither a version nor a semver range; write e.g. 1.4.2, ^1.4, ~1.4.2 or ">=1.2.0 <2.0.0"`,
    };
  }
}

/** A version as a registry or index names it, made comparable (`v1.2.3` and tag `1.2.3_build` included). */
export function asSemver(version: string): semver.SemVer | undefined {
  const v = semver.parse(version.replace(/_/gu, '+'), { loose: true });
  return v ?? undefined;
}

export type VersionPick<T> = { ok: true; chosen: T; version: semver.SemVer } | { ok: false; nearest: string[]; available: number };

/**
 * The newest candidate `constraint` allows (an exact version also matches its own spelling, e.g. a
 * tag `v1.2.3`). When nothing matches, `nearest` lists up to five available versions around where
 * the constraint points, newest first, so a message can say what there is instead.
 */
export function pickVersion<T extends { readonly version: string }>(candidates: readonly T[], constraint: string | undefined): VersionPick<T> {
  const parsed = parseConstraint(constraint);
  const range = parsed.ok ? parsed.range : undefined;
  const usable = candidates.flatMap((c) => {
    const v = asSemver(c.version);
    return v === undefined ? [] : [{ c, v }];
  });
  usable.sort((a, b) => semver.rcompare(a.v, b.v));
  const exact = constraint === undefined ? undefined : usable.find((u) => u.c.version === constraint.trim());
  if (exact !== undefined) return { ok: true, chosen: exact.c, version: exact.v };
  const match = usable.find((u) => (range === undefined ? u.v.prerelease.length === 0 : range.test(u.v)));
  if (match !== undefined && parsed.ok) return { ok: true, chosen: match.c, version: match.v };
  return { ok: false, nearest: nearestVersions(usable.map((u) => u.v), range), available: usable.length };
}

/** Up to five versions around the lowest one `range` allows: three below it, two above, newest first. */
function nearestVersions(sortedNewestFirst: readonly semver.SemVer[], range: semver.Range | undefined): string[] {
  if (range === undefined) return sortedNewestFirst.slice(0, 5).map((v) => v.version);
  const floor = semver.minVersion(range);
  if (floor === null) return sortedNewestFirst.slice(0, 5).map((v) => v.version);
  const ascending = [...sortedNewestFirst].reverse();
  const at = ascending.findIndex((v) => semver.gte(v, floor));
  const split = at === -1 ? ascending.length : at;
  return [...ascending.slice(Math.max(0, split - 3), split), ...ascending.slice(split, split + 2)].reverse().map((v) => v.version);
}

/** Whether `version` satisfies `constraint` (the cache's test when the registry cannot be asked). */
export function satisfies(version: string, constraint: string | undefined): boolean {
  return pickVersion([{ version }], constraint).ok;
}
