/**
 * Which of 1024 buckets an object's owner falls into, by the owner's uid: the unit a shard ring
 * assigns to its members (controller/sharding/ring.ts), and the value of the owner-bucket label
 * every deployed object carries so each member's dependent watches can select its own share.
 * Here, at the bottom, because the post-renderer, the Ansible proxy, the dependent watches and
 * the ring all need the same answer.
 */
import { hash } from 'node:crypto';

/**
 * Buckets owners fall into by uid. Never change it: it is written into every object chartpilot
 * deployed (the owner-bucket label), and a different count would make those labels name the
 * wrong buckets.
 */
export const BUCKETS = 1024;

/** The first 32 bits of SHA-256 of `text`, unsigned. */
export function hashPoint(text: string): number {
  return Buffer.from(hash('sha256', text, 'hex').slice(0, 8), 'hex').readUInt32BE(0);
}

/** The bucket (0 … BUCKETS-1) of an owner by its uid: stable for its whole life, whoever owns it. */
export function bucketOf(uid: string, buckets: number = BUCKETS): number {
  return hashPoint(uid) % buckets;
}
