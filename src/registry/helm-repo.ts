/**
 * A chart in a classic Helm repository: index.yaml read with a conditional GET (an unchanged
 * index costs one 304 and no parsing), the chart's entries, and an archive downloaded from the
 * entry's URL (relative ones against the repository). Credentials go only to the repository's own
 * host, as Helm does without --pass-credentials.
 */
import { parseDocument } from 'yaml';
import { isPlainObject } from '../lib/json.js';
import { ChartSourceError } from './errors.js';
import { DOWNLOAD_TIMEOUT_MS, type RegistryHttp } from './http.js';

export interface IndexEntry {
  readonly version: string;
  /** `sha256:<hex>` of the archive as the index lists it (`digest:` holds bare hex). */
  readonly digest: string | undefined;
  readonly urls: readonly string[];
}

export class RepoChart {
  private etag: string | undefined;
  private entries: IndexEntry[] | undefined;

  constructor(
    private readonly http: RegistryHttp,
    private readonly url: string,
    private readonly chart: string,
  ) {}

  /** The chart's entries in index.yaml; the previous ones when the server says it has not changed. */
  async index(): Promise<IndexEntry[]> {
    const headers: Record<string, string> = this.etag === undefined || this.entries === undefined ? {} : { 'If-None-Match': this.etag };
    const res = await this.http.fetch(`${this.url}/index.yaml`, { headers, pass: [304, 404] });
    if (res.status === 304 && this.entries !== undefined) return this.entries;
    if (res.status === 404) {
      await res.body?.cancel();
      throw new ChartSourceError('ChartNotFound', `${this.url} has no index.yaml (404); is it a Helm repository? (helm repo index writes one)`);
    }
    const text = await res.text();
    const entries = parseIndex(text, this.chart, this.url);
    this.etag = res.headers.get('etag') ?? undefined;
    this.entries = entries;
    return entries;
  }

  async download(entry: IndexEntry): Promise<Buffer> {
    const first = entry.urls[0];
    if (first === undefined) throw new ChartSourceError('ChartNotFound', `index.yaml of ${this.url} lists ${this.chart} ${entry.version} without a URL`);
    const url = new URL(first, `${this.url}/`);
    const own = url.origin === new URL(this.url).origin;
    const res = await (own ? this.http : this.http.anonymous()).fetch(url.toString(), { timeoutMs: DOWNLOAD_TIMEOUT_MS });
    return Buffer.from(await res.arrayBuffer());
  }
}

/** The entries of `chart` in an index.yaml, newest first as the file lists them. */
export function parseIndex(text: string, chart: string, url: string): IndexEntry[] {
  const doc = parseDocument(text, { version: '1.1' });
  if (doc.errors.length > 0) throw new ChartSourceError('InvalidChartArchive', `index.yaml of ${url} is not valid YAML (${doc.errors[0]?.message.split('\n')[0] ?? ''})`);
  const root: unknown = doc.toJS({ maxAliasCount: 100 });
  const all = isPlainObject(root) && isPlainObject(root['entries']) ? root['entries'] : undefined;
  if (all === undefined) throw new ChartSourceError('InvalidChartArchive', `index.yaml of ${url} has no entries map; is it a Helm repository index?`);
  const list = all[chart];
  if (!Array.isArray(list)) {
    const names = Object.keys(all).slice(0, 10);
    throw new ChartSourceError('ChartNotFound', `${url} has no chart named ${chart}${names.length === 0 ? ' (its index is empty)' : ` (it has ${names.join(', ')}${Object.keys(all).length > 10 ? ', …' : ''})`}`);
  }
  return (list as unknown[]).flatMap((e) => {
    if (!isPlainObject(e) || (typeof e['version'] !== 'string' && typeof e['version'] !== 'number')) return [];
    const digest = typeof e['digest'] === 'string' && e['digest'] !== '' ? (e['digest'].startsWith('sha256:') ? e['digest'] : `sha256:${e['digest']}`) : undefined;
    const urls = Array.isArray(e['urls']) ? e['urls'].filter((u): u is string => typeof u === 'string') : [];
    return [{ version: String(e['version']), digest, urls }];
  });
}
