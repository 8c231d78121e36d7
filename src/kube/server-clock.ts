/**
 * The API server's clocks, read once as the operator starts, before it stands by for leadership or a shard: its wall time (the `Date`
 * header, whole seconds) carried on with this host's monotonic clock, so a host whose wall clock
 * is off, or steps, reads the server's time all the same; and its write order (the resourceVersion
 * of a consistent LIST of Secrets — comparable between Secrets, KEP-5504) at that moment.
 */
import type { ServerClock } from '../core/ports.js';
import { KubeApiError } from './errors.js';
import { ACCEPT_METADATA_LIST, type KubeClient } from './rest.js';

export interface ServerStart {
  readonly clock: ServerClock;
  /** The Secrets' resourceVersion when the LIST was served; undefined when the server gave none. */
  readonly resourceVersion: string | undefined;
}

/**
 * One metadata-only LIST of at most one Secret (in `namespace`, or the whole cluster): the
 * answer's `Date` and list resourceVersion. Rejects when the server cannot be reached or refuses.
 */
export async function readServerStart(client: KubeClient, namespace: string | undefined, monotonic: () => number = () => performance.now()): Promise<ServerStart> {
  const path = namespace === undefined ? '/api/v1/secrets' : `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
  const sent = monotonic();
  const res = await client.forward({ method: 'GET', pathAndQuery: `${path}?limit=1`, headers: { accept: ACCEPT_METADATA_LIST } });
  const received = monotonic();
  const chunks: Buffer[] = [];
  for await (const chunk of res.body) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (res.status < 200 || res.status > 299) throw KubeApiError.fromResponse(res.status, text, { method: 'GET', path });
  const date = Date.parse(res.headers.date ?? '');
  if (Number.isNaN(date)) throw new KubeApiError(`GET ${path}: the API server sent no Date header`, { status: res.status, reason: 'InternalError', method: 'GET', path });
  const rv = (JSON.parse(text) as { metadata?: { resourceVersion?: unknown } }).metadata?.resourceVersion;
  return { clock: serverClockFrom(date, (sent + received) / 2, monotonic), resourceVersion: typeof rv === 'string' && rv !== '' ? rv : undefined };
}

/**
 * The server's time from one `Date` (whole seconds: the answer was made within [date, date+1 s))
 * taken at monotonic time `at`: the middle of that second, then as much later as the monotonic
 * clock has moved. Off by at most half a second plus half the round trip.
 */
export function serverClockFrom(date: number, at: number, monotonic: () => number): ServerClock {
  const base = date + 500;
  return { now: () => Math.round(base + (monotonic() - at)) };
}
