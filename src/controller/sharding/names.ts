/**
 * The names a shard ring writes: the assignment and drain labels on CRs, the labels and annotations
 * of each member's Lease, and the checks that a ring and a member name fit them.
 */
import { hostname } from 'node:os';
import { labelValueProblem } from '../../config/labels.js';

const PREFIX = 'shard.chartpilot.io';

/** The label naming a CR's owner in `ring` (`kubectl get -L shard.chartpilot.io/<ring>`). */
export function shardLabel(ring: string): string {
  return `${PREFIX}/${ring}`;
}

/** Set by the sharder on a CR that is to move: its owner stops, then removes both labels. */
export function drainLabel(ring: string): string {
  return `drain.${PREFIX}/${ring}`;
}

/** Every member Lease of a ring carries this label with the ring's name, so members find each other. */
export const RING_LABEL = `${PREFIX}/ring`;
/** Annotations of a member Lease. */
export const MemberAnnotations = {
  /** The member's name: the value it gets in CRs' shard labels. */
  member: `${PREFIX}/member`,
  /** chartpilot's version: members of different versions must not share a ring. */
  version: `${PREFIX}/version`,
  /** Digest of the settings that decide the assignment (watched kinds, shard flags): must match. */
  settings: `${PREFIX}/settings`,
  /** This process in helm call ids (StoppedCalls.instance): once it is dead, its locks are nobody's. */
  instance: `${PREFIX}/instance`,
  /** Set while the member stops: it takes no new CRs and hands its own back. */
  leaving: `${PREFIX}/leaving`,
  /** The ring as this member sees it (its members, sorted, comma-separated): it acts only on CRs this ring gives it. */
  view: `${PREFIX}/view`,
  /** Uids (comma-separated) of CRs this member still reconciles although its view gives them to another. */
  busy: `${PREFIX}/busy`,
} as const;

/** The Lease of member `member` in ring `ring` (a DNS subdomain when both fit a label value). */
export function memberLeaseName(ring: string, member: string): string {
  return `${ring}-shard-${member}`;
}

/** Why `ring` cannot name a shard ring (it is the name part of a label key), or undefined. */
export function ringNameProblem(ring: string): string | undefined {
  if (ring.length > 63 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/u.test(ring)) {
    return (
      `--shards: the ring name (--leader-election-id) "${ring}" must be at most 63 lower-case letters, digits or '-' ` +
      `(it becomes the label shard.chartpilot.io/<ring> on every CR); choose a shorter --leader-election-id such as my-operator`
    );
  }
  return undefined;
}

/**
 * This replica's name in the ring: POD_NAME (the Deployment passes it by the downward API), else
 * `<hostname>-<pid>`, lower-cased; or a problem when it cannot be a label value.
 */
export function memberName(env: Readonly<Record<string, string | undefined>>, host: string = hostname(), pid: number = process.pid): { ok: true; name: string } | { ok: false; problem: string } {
  const fromEnv = env.POD_NAME?.trim();
  const name = fromEnv !== undefined && fromEnv !== '' ? fromEnv : `${host.toLowerCase().replace(/[^a-z0-9-]/gu, '-').replace(/^-+|-+$/gu, '').slice(0, 50)}-${String(pid)}`;
  const problem = labelValueProblem(name);
  if (problem !== undefined || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/u.test(name)) {
    return {
      ok: false,
      problem: `--shards: this replica's name "${name}" (${fromEnv !== undefined && fromEnv !== '' ? 'POD_NAME' : 'host name and pid'}) must be at most 63 lower-case letters, digits or '-' (it becomes a label value); set POD_NAME to a shorter name`,
    };
  }
  return { ok: true, name };
}
