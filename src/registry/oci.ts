/**
 * A chart in an OCI registry, read with the distribution API as `helm pull oci://…` would: the
 * repository's tags, a tag's manifest (its digest from a HEAD alone), and the chart layer
 * (`application/vnd.cncf.helm.chart.content.v1.tar+gzip`), verified against its digest.
 */
import { createHash } from 'node:crypto';
import { ChartSourceError } from './errors.js';
import { DOWNLOAD_TIMEOUT_MS, type RegistryHttp } from './http.js';

export const HELM_CHART_LAYER = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip';
const MANIFEST_TYPES = 'application/vnd.oci.image.manifest.v1+json';
/** Registries page tag lists; a chart with more versions than this over all pages is not plausible. */
const MAX_PAGES = 50;

export interface ChartManifest {
  /** The manifest's digest (what `helm push` prints, what chartDigest pins). */
  readonly digest: string;
  /** The chart archive's digest (the layer), which is also its sha256 once downloaded. */
  readonly layer: string;
}

export class OciChart {
  private readonly base: string;
  private readonly scope: string;

  constructor(
    private readonly http: RegistryHttp,
    host: string,
    private readonly repository: string,
  ) {
    this.base = `https://${host}/v2/${repository}`;
    this.scope = `repository:${repository}:pull`;
  }

  /** Every tag of the repository (all pages). */
  async tags(): Promise<string[]> {
    const out: string[] = [];
    let next: string | undefined = `${this.base}/tags/list?n=1000`;
    for (let page = 0; next !== undefined && page < MAX_PAGES; page++) {
      const res = await this.http.fetch(next, { accept: 'application/json', scope: this.scope, pass: [404] });
      if (res.status === 404) {
        await res.body?.cancel();
        throw new ChartSourceError('ChartNotFound', `the registry has no chart ${this.repository} (its tag list answered 404); check the path in chart: oci://…`);
      }
      const body = (await res.json().catch(() => ({}))) as { tags?: unknown };
      if (Array.isArray(body.tags)) out.push(...body.tags.filter((t): t is string => typeof t === 'string'));
      next = nextPage(res.headers.get('link'), next);
    }
    return out;
  }

  /** The digest of the manifest `tag` points to, from a HEAD (no body). */
  async manifestDigest(tag: string): Promise<string> {
    const res = await this.http.fetch(`${this.base}/manifests/${tag}`, { method: 'HEAD', accept: MANIFEST_TYPES, scope: this.scope });
    const digest = res.headers.get('docker-content-digest');
    if (digest !== null && digest !== '') return digest;
    return (await this.manifest(tag)).digest;
  }

  async manifest(reference: string): Promise<ChartManifest> {
    const res = await this.http.fetch(`${this.base}/manifests/${reference}`, { accept: MANIFEST_TYPES, scope: this.scope });
    const bytes = Buffer.from(await res.arrayBuffer());
    const digest = res.headers.get('docker-content-digest') ?? `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    let parsed: { layers?: { mediaType?: string; digest?: string }[] };
    try {
      parsed = JSON.parse(bytes.toString('utf8')) as typeof parsed;
    } catch {
      throw new ChartSourceError('InvalidChartArchive', `the manifest of ${this.repository}:${reference} is not JSON`);
    }
    const layer = parsed.layers?.find((l) => l.mediaType === HELM_CHART_LAYER)?.digest;
    if (layer === undefined) {
      throw new ChartSourceError('InvalidChartArchive', `${this.repository}:${reference} is not a Helm chart (its manifest has no ${HELM_CHART_LAYER} layer)`);
    }
    return { digest, layer };
  }

  /** The blob's bytes, checked against its digest. */
  async blob(digest: string): Promise<Buffer> {
    const res = await this.http.fetch(`${this.base}/blobs/${digest}`, { scope: this.scope, timeoutMs: DOWNLOAD_TIMEOUT_MS });
    const bytes = Buffer.from(await res.arrayBuffer());
    const got = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    if (got !== digest) {
      throw new ChartSourceError('DigestMismatch', `the chart archive of ${this.repository} downloaded as ${got}, but its manifest says ${digest} (truncated or altered in transit or in the registry); refusing it`);
    }
    return bytes;
  }
}

/** The next page from a `Link: </v2/…?last=x&n=…>; rel="next"` header, resolved against `current`. */
export function nextPage(link: string | null, current: string): string | undefined {
  const m = link === null ? null : /<([^>]+)>\s*;\s*rel="?next"?/u.exec(link);
  return m?.[1] === undefined ? undefined : new URL(m[1], current).toString();
}
