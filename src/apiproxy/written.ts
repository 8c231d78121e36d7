/** What a successful write touched, read from the server's answer (and the URL where it says less). */
import type { SessionOwner } from './ownership.js';
import type { ResourceRequest } from './request-info.js';
import type { ResourceInfo } from './resources.js';
import type { SessionObject } from './sessions.js';
import type { WriteVerb } from './write-policy.js';
import { getOwn, isPlainMap, type PlainMap } from '../lib/json.js';

/** The objects a successful write touched. */
export function writtenObjects(verb: WriteVerb, status: number, target: ResourceRequest, info: ResourceInfo, answer: Buffer): SessionObject[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const apiVersion = info.group === '' ? info.version : `${info.group}/${info.version}`;
  const namespace = info.namespaced ? target.namespace : undefined;
  const base = { apiVersion, kind: info.kind, resource: info.resource, namespace };
  if (verb === 'deletecollection') {
    const items = isPlainMap(parsed) ? getOwn(parsed, 'items') : undefined;
    if (!Array.isArray(items)) return [];
    return items.flatMap((item) => {
      const m = isPlainMap(item) ? getOwn(item, 'metadata') : undefined;
      const name = isPlainMap(m) ? stringOrUndefined(getOwn(m, 'name')) : undefined;
      if (name === undefined || !isPlainMap(m)) return [];
      return [{ ...base, namespace: info.namespaced ? (stringOrUndefined(getOwn(m, 'namespace')) ?? namespace) : undefined, name, uid: stringOrUndefined(getOwn(m, 'uid')), action: 'deleted' as const }];
    });
  }
  const obj: PlainMap = isPlainMap(parsed) ? parsed : {};
  const meta = getOwn(obj, 'metadata');
  const details = getOwn(obj, 'details');
  const name = target.name ?? (isPlainMap(meta) ? stringOrUndefined(getOwn(meta, 'name')) : undefined);
  if (name === undefined) return [];
  const uid = (isPlainMap(meta) ? stringOrUndefined(getOwn(meta, 'uid')) : undefined) ?? (isPlainMap(details) ? stringOrUndefined(getOwn(details, 'uid')) : undefined);
  const action = verb === 'delete' ? 'deleted' : verb === 'create' || status === 201 ? 'created' : 'updated';
  return [{ ...base, name, uid, action }];
}

/** Whether a written object is the run's own custom resource (not part of its inventory). */
export function isOwnerRef(owner: SessionOwner, o: SessionObject): boolean {
  if (o.uid !== undefined && o.uid === owner.uid) return true;
  const group = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '');
  return o.kind === owner.kind && o.name === owner.name && (o.namespace ?? '') === (owner.namespace ?? '') && group(o.apiVersion) === group(owner.apiVersion);
}

function stringOrUndefined(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
