/**
 * For tests that stand in for a helm call the operator made (a lock left by a helm it ran and that
 * was killed): the record MAC the operator's API proxy stamps on each record helm writes through
 * it, made with the operator's own master key and the real src/helm/record-mac.ts.
 */
import { deriveRecordKey, recordBytesOf, recordMac, RECORD_MAC_ANNOTATION } from '../../src/helm/record-mac.js';
import { DEFAULT_SEAL_KEY_SECRET, SEAL_KEY_FIELD } from '../../src/helm/seal-key.js';
import { getJson, type TestCluster } from './harness.js';
import { OPERATOR_NAMESPACE } from './operator.js';

/** `secret` (a record as it will be stored in `namespace`) with the annotation the proxy would add for the CR `crUid`. */
export async function stampedAsOperatorWould(c: TestCluster, secret: Record<string, unknown>, namespace: string, crUid: string): Promise<Record<string, unknown>> {
  const keySecret = await getJson<{ data: Record<string, string> }>(c, ['get', 'secret', DEFAULT_SEAL_KEY_SECRET, '-n', OPERATOR_NAMESPACE, '-o', 'json']);
  const master = Buffer.from(keySecret.data[SEAL_KEY_FIELD] ?? '', 'base64');
  const bytes = recordBytesOf(secret, namespace);
  if (bytes === undefined) throw new Error('not a release record: no data.release');
  const metadata = { ...(secret['metadata'] as Record<string, unknown>) };
  metadata['annotations'] = { ...(metadata['annotations'] as Record<string, string> | undefined), [RECORD_MAC_ANNOTATION]: recordMac(deriveRecordKey(master, crUid), bytes) };
  return { ...secret, metadata };
}
