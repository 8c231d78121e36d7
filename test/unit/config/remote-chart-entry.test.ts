import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseWatches } from '../../../src/config/watches.js';

/** Parses one entry (with `group`, `version: v1`, `kind: Web` added) with no chart on disk. */
async function parse(fields: string): Promise<{ ok: true; entry: unknown } | { ok: false; problems: string[] }> {
  const r = await parseWatches(`- group: demo.example.com\n  version: v1\n  kind: Web\n${fields}`, '/opt', {}, () => Promise.resolve(undefined));
  return r.ok ? { ok: true, entry: r.entries[0] } : r;
}

async function problems(fields: string): Promise<string[]> {
  const r = await parse(fields);
  if (r.ok) assert.fail('expected problems');
  return r.problems;
}

describe('watches.yaml: charts from registries', () => {
  it('reads an OCI chart with a range, a digest, a refresh interval and a pull secret', async () => {
    const r = await parse(
      `  chart: oci://Registry.example.com:5000/charts/webapp\n  chartVersion: ^1.4\n  chartDigest: sha256:${'a'.repeat(64)}\n  chartRefreshInterval: 90s\n  chartPullSecret: regcred\n`,
    );
    assert.ok(r.ok);
    const e = r.entry as { chartPath: string; remote: unknown };
    assert.equal(e.chartPath, '');
    assert.deepEqual(e.remote, {
      type: 'oci',
      reference: 'oci://registry.example.com:5000/charts/webapp',
      location: 'registry.example.com:5000',
      name: 'charts/webapp',
      version: '^1.4',
      digest: `sha256:${'a'.repeat(64)}`,
      refreshIntervalMs: 90_000,
      pullSecret: 'regcred',
    });
  });

  it('reads a chart of an HTTP(S) repository; the chart is not looked for on disk', async () => {
    let checked = false;
    const r = await parseWatches('- {version: v1, kind: Web, chart: webapp, repository: "https://charts.example.com/stable/", chartVersion: "1.2.3"}', '/opt', {}, () => {
      checked = true;
      return Promise.resolve('not found');
    });
    assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
    assert.equal(checked, false);
    const remote = r.entries[0]?.remote;
    assert.deepEqual(
      [remote?.type, remote?.location, remote?.name, remote?.version, remote?.refreshIntervalMs],
      ['repository', 'https://charts.example.com/stable', 'webapp', '1.2.3', undefined],
    );
  });

  it('names conflicting and misplaced keys, one line each', async () => {
    assert.deepEqual(await problems('  chart: oci://r.example.com/charts/webapp\n  repository: https://charts.example.com\n'), [
      'watches.yaml entry 1 (Web.v1.demo.example.com), line 5: repository is for HTTP(S) Helm repositories, but chart "oci://r.example.com/charts/webapp" is an OCI reference that names the chart in full — remove repository',
    ]);
    assert.deepEqual(await problems('  chart: helm-charts/web\n  chartVersion: ^1\n  chartDigest: sha256:00\n'), [
      'watches.yaml entry 1 (Web.v1.demo.example.com), line 5: chartVersion applies to a chart from a registry (chart: oci://… or repository: https://…); chart "helm-charts/web" is a local chart, whose version is its Chart.yaml — remove chartVersion',
      'watches.yaml entry 1 (Web.v1.demo.example.com), line 6: chartDigest applies to a chart from a registry (chart: oci://… or repository: https://…); chart "helm-charts/web" is a local chart, whose version is its Chart.yaml — remove chartDigest',
    ]);
    const list = await problems('  chart: charts/webapp\n  repository: oci://r.example.com/charts\n');
    assert.match(list.join('\n'), /repository "oci:\/\/r\.example\.com\/charts" is an OCI registry; name the chart in full instead: chart: oci:\/\/<host>\/<path>\/<chart>, without repository/u);
    assert.match(list.join('\n'), /with repository, chart is the chart's name in that repository's index\.yaml \(e\.g\. webapp\), not "charts\/webapp"/u);
  });

  it('refuses malformed references, versions, digests, intervals and secret names', async () => {
    const all = (
      await problems(
        `  chart: oci://r.example.com/charts/webapp:1.2.3\n  chartVersion: soon\n  chartDigest: md5:abc\n  chartRefreshInterval: 10\n  chartPullSecret: Not_A_Name\n`,
      )
    ).join('\n');
    assert.match(all, /carries a tag or digest; name the chart only, and put the version in chartVersion and a digest in chartDigest/u);
    assert.match(all, /chartVersion "soon" is neither a version nor a semver range/u);
    assert.match(all, /chartDigest "md5:abc" is not a digest; write sha256: and 64 lower-case hex digits/u);
    assert.match(all, /chartRefreshInterval is a number \(10\); expected a Go duration/u);
    assert.match(all, /chartPullSecret "Not_A_Name" is not a Secret name/u);
    assert.match((await problems('  chart: oci://r.example.com\n')).join('\n'), /has no valid repository path after the host/u);
    assert.match((await problems('  chart: webapp\n  repository: https://user:pw@charts.example.com\n')).join('\n'), /holds credentials; put them in a Secret named by chartPullSecret/u);
  });

  it('points other tools\' spellings and a chart version under `version` at the right keys', async () => {
    const hint = await problems('  chart: oci://r.example.com/charts/webapp\n  digest: sha256:00\n');
    assert.deepEqual(hint, ['watches.yaml entry 1 (Web.v1.demo.example.com), line 5: unknown key "digest"; did you mean "chartDigest"?']);
    const r = await parseWatches('- {version: "1.4.2", kind: Web, chart: "oci://r.example.com/c/webapp"}', '/opt', {}, () => Promise.resolve(undefined));
    assert.match(r.ok ? '' : r.problems.join('\n'), /version "1\.4\.2" is not a valid API version; .* \(a chart's version goes in chartVersion\)/u);
  });

  it('accepts chartRefreshInterval 0 (resolve once)', async () => {
    const r = await parse('  chart: oci://r.example.com/charts/webapp\n  chartRefreshInterval: 0\n');
    assert.ok(r.ok);
    assert.equal((r.entry as { remote: { refreshIntervalMs: number } }).remote.refreshIntervalMs, 0);
  });
});
