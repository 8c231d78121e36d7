/**
 * The content-addressed chart cache (on the image's writable /tmp by default): every pulled
 * archive once, as `blobs/sha256/<hex>.tgz` named by its own digest, plus per chart reference a
 * record of which versions (and OCI manifest digests) resolved to which archive. The records let
 * the operator start on a cached copy when the registry cannot be asked, and skip a download when
 * a refresh points at content it already has. Files are private (0600 in 0700 directories):
 * charts of private registries are not for other users of the machine.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface CachedVersion {
  readonly version: string;
  /** oci: the manifest digest the version's tag pointed to; repository: the index's digest. */
  readonly announced: string | undefined;
  /** `sha256:<hex>` of the archive. */
  readonly blob: string;
}

interface Record {
  readonly reference: string;
  versions: CachedVersion[];
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

export class ChartCache {
  constructor(readonly dir: string) {}

  /** Where the archive with this digest is (whether or not it is there). */
  blobPath(digest: string): string {
    return join(this.dir, 'blobs', 'sha256', `${digest.replace(/^sha256:/u, '')}.tgz`);
  }

  /** Stores an archive; returns its digest. Written under a temporary name and renamed, so a reader never sees half a file. */
  async put(bytes: Uint8Array): Promise<string> {
    const digest = `sha256:${sha256(bytes)}`;
    const file = this.blobPath(digest);
    await mkdir(join(this.dir, 'blobs', 'sha256'), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, bytes, { mode: 0o600 });
    await rename(tmp, file);
    return digest;
  }

  /** Whether the archive is there and still has the digest it is named by (a damaged file is removed). */
  async has(digest: string): Promise<boolean> {
    const file = this.blobPath(digest);
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch {
      return false;
    }
    if (`sha256:${sha256(bytes)}` === digest) return true;
    await rm(file, { force: true });
    return false;
  }

  /** What is remembered about a reference's versions. */
  async recall(reference: string): Promise<CachedVersion[]> {
    try {
      const record = JSON.parse(await readFile(this.recordPath(reference), 'utf8')) as Record;
      return record.reference === reference && Array.isArray(record.versions) ? record.versions : [];
    } catch {
      return [];
    }
  }

  /** Remembers that `version` of `reference` is the archive `blob`. */
  async remember(reference: string, entry: CachedVersion): Promise<void> {
    const versions = (await this.recall(reference)).filter((v) => !(v.version === entry.version && v.announced === entry.announced));
    versions.push(entry);
    const file = this.recordPath(reference);
    await mkdir(join(this.dir, 'records'), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, JSON.stringify({ reference, versions: versions.slice(-50) } satisfies Record), { mode: 0o600 });
    await rename(tmp, file);
  }

  private recordPath(reference: string): string {
    return join(this.dir, 'records', `${sha256(Buffer.from(reference)).slice(0, 32)}.json`);
  }
}
