/**
 * Which connections the metrics and probe servers keep, by peer address: one peer (a tenant pod
 * reopening every connection it loses) may hold only its share, so the kubelet and the scraper,
 * other peers, still get a slot. The overall cap stays as the bound on file descriptors; when it
 * is reached, a peer holding fewer connections than the heaviest one gets in at that one's
 * expense, so filling the cap takes as many distinct addresses as it has slots.
 */

export interface AdmissionLimits {
  /** All connections together: the file descriptors a flood may cost at most. */
  readonly maxConnections: number;
  /** One peer address's share; a connection beyond it is closed at once. */
  readonly maxPerPeer: number;
}

export type Admission =
  | { readonly admit: true; readonly evict?: undefined }
  /** Admit it, and close one connection of `evict` (the peer holding the most) to make room. */
  | { readonly admit: true; readonly evict: string }
  | { readonly admit: false; readonly why: 'peer-share' | 'full' };

/** What to do with a new connection from `peer`, given how many each peer holds now. */
export function admission(held: ReadonlyMap<string, number>, peer: string, limits: AdmissionLimits): Admission {
  const mine = held.get(peer) ?? 0;
  if (mine >= limits.maxPerPeer) return { admit: false, why: 'peer-share' };
  let total = 0;
  let heaviest: string | undefined;
  let most = 0;
  for (const [p, n] of held) {
    total += n;
    if (n > most) {
      most = n;
      heaviest = p;
    }
  }
  if (total < limits.maxConnections) return { admit: true };
  // Only when that leaves the heaviest peer with no fewer than this one: two peers never take a
  // slot from each other back and forth.
  if (heaviest !== undefined && most > mine + 1) return { admit: true, evict: heaviest };
  return { admit: false, why: 'full' };
}

/**
 * The peer a connection counts for: its address, with an IPv4 peer of a dual-stack listener
 * (`::ffff:10.0.0.7`) counted as the IPv4 address. Undefined when the socket is already gone.
 */
export function peerOf(remoteAddress: string | undefined): string | undefined {
  if (remoteAddress === undefined || remoteAddress === '') return undefined;
  return remoteAddress.toLowerCase().startsWith('::ffff:') && remoteAddress.includes('.') ? remoteAddress.slice(7) : remoteAddress;
}

/** The connections a server holds, by peer, oldest first; `admission` decides who gets in. */
export class PeerConnections<C> {
  private readonly byPeer = new Map<string, Set<C>>();
  private readonly counts = new Map<string, number>();

  constructor(private readonly limits: AdmissionLimits) {}

  /**
   * Takes `conn` from `peer` in when `admission` says so; returns whether it was, and the
   * connection (another peer's oldest) to close for it. Either way the caller closes what is out.
   */
  offer(peer: string, conn: C): { admitted: boolean; evicted?: C | undefined } {
    const decision = admission(this.counts, peer, this.limits);
    if (!decision.admit) return { admitted: false };
    let evicted: C | undefined;
    if (decision.evict !== undefined) {
      evicted = this.byPeer.get(decision.evict)?.values().next().value;
      if (evicted !== undefined) this.release(decision.evict, evicted);
    }
    const mine = this.byPeer.get(peer) ?? new Set<C>();
    mine.add(conn);
    this.byPeer.set(peer, mine);
    this.counts.set(peer, mine.size);
    return { admitted: true, evicted };
  }

  /** `conn` closed (or was evicted); a second call for it changes nothing. */
  release(peer: string, conn: C): void {
    const mine = this.byPeer.get(peer);
    if (mine?.delete(conn) !== true) return;
    if (mine.size === 0) {
      this.byPeer.delete(peer);
      this.counts.delete(peer);
    } else {
      this.counts.set(peer, mine.size);
    }
  }

  /** Every connection held, for closing them all. */
  all(): C[] {
    return [...this.byPeer.values()].flatMap((s) => [...s]);
  }

  /** How many `peer` holds (every peer's together without one). */
  held(peer?: string): number {
    if (peer !== undefined) return this.counts.get(peer) ?? 0;
    let total = 0;
    for (const n of this.counts.values()) total += n;
    return total;
  }
}
