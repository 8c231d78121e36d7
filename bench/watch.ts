/**
 * LIST, then WATCH from the list's resourceVersion, for as long as the bench needs: every change
 * of a namespace's objects reaches the caller with the time the bench saw it, without polling.
 * Reconnects where the stream left off; relists when the server says that point is gone (410).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchKube } from './kube.js';
import { errorMessage } from '../src/lib/errors.js';

export interface Named {
  metadata: { name: string; resourceVersion?: string };
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Watch<T extends Named> {
  /** The objects the first LIST returned (the state the phase starts from). */
  readonly initial: readonly T[];
  stop(): Promise<void>;
}

interface ListBody<T> {
  metadata?: { resourceVersion?: string };
  items?: T[];
}

interface WatchLine<T> {
  type?: string;
  object?: T & { code?: number; metadata?: { resourceVersion?: string } };
}

/**
 * path: a collection (e.g. /apis/apps/v1/namespaces/x/deployments). onEvent runs for every change
 * after the initial list, with Date.now() as the bench saw it. Resolves once the watch is open.
 */
export async function listAndWatch<T extends Named>(
  kube: BenchKube,
  path: string,
  onEvent: (type: WatchEventType, obj: T, at: number) => void,
  log: (line: string) => void,
): Promise<Watch<T>> {
  const known = new Set<string>();
  const list = async (): Promise<{ items: T[]; rv: string }> => {
    const body = await kube.json<ListBody<T>>('GET', path);
    return { items: body?.items ?? [], rv: body?.metadata?.resourceVersion ?? '' };
  };
  const first = await list();
  for (const o of first.items) known.add(o.metadata.name);
  let rv = first.rv;
  let expired = false;
  const stop = new AbortController();
  const stopped = (): boolean => stop.signal.aborted;

  const onLine = (line: string): void => {
    let ev: WatchLine<T>;
    try {
      ev = JSON.parse(line) as WatchLine<T>;
    } catch {
      return;
    }
    const at = Date.now();
    const obj = ev.object;
    if (obj === undefined) return;
    if (ev.type === 'ERROR') {
      if (obj.code === 410) expired = true;
      return;
    }
    if (obj.metadata.resourceVersion !== undefined) rv = obj.metadata.resourceVersion;
    if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED') {
      if (ev.type === 'DELETED') known.delete(obj.metadata.name);
      else known.add(obj.metadata.name);
      onEvent(ev.type, obj, at);
    }
  };

  const open = async (): Promise<{ ended: Promise<void> }> => {
    if (expired) {
      // The resourceVersion is too old: take the state anew, as changes seen now.
      expired = false;
      const again = await list();
      const at = Date.now();
      const present = new Set(again.items.map((o) => o.metadata.name));
      for (const name of [...known].filter((n) => !present.has(n))) {
        known.delete(name);
        onEvent('DELETED', { metadata: { name } } as T, at);
      }
      for (const o of again.items) {
        known.add(o.metadata.name);
        onEvent('MODIFIED', o, at);
      }
      rv = again.rv;
    }
    const sep = path.includes('?') ? '&' : '?';
    const r = await kube.stream(`${path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(rv)}`, onLine, stop.signal);
    if (r.status === 410) expired = true;
    else if (r.status !== 200) throw new Error(`watch ${path} answered ${r.status}`);
    return { ended: r.ended };
  };

  let { ended } = await open();
  const loop = (async () => {
    for (;;) {
      await ended;
      if (stopped()) return;
      try {
        ({ ended } = await open());
      } catch (err) {
        if (stopped()) return;
        log(`watch ${path}: ${errorMessage(err)}; retrying`);
        await sleep(500);
        ended = Promise.resolve();
      }
    }
  })();

  return {
    initial: first.items,
    async stop() {
      stop.abort();
      await loop;
    },
  };
}
