import assert from 'node:assert/strict';
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { functionsIn, templateFunctions } from '../../../src/config/template-functions.js';
import { WATCH_FIXTURES } from './fixtures.js';
import { gzipSync } from 'node:zlib';
import { tar } from './tar-writer.js';

const CHARTS = join(dirname(WATCH_FIXTURES), 'charts');

describe('template functions', () => {
  it('finds lookup and tpl calls in template actions only', () => {
    assert.deepEqual(functionsIn('data: {{ tpl .Values.note . | quote }}'), { lookup: false, tpl: true });
    assert.deepEqual(functionsIn('{{- $s := (lookup "v1" "Secret" .Release.Namespace "x") }}'), { lookup: true, tpl: false });
    assert.deepEqual(functionsIn('{{ include "common.tplvalues.render" (dict "value" .Values.x "context" $) }}'), { lookup: false, tpl: false }, 'names inside strings');
    assert.deepEqual(functionsIn('{{ .Values.lookup }} {{ $tpl := 1 }} {{ .Values.tpl.x }}'), { lookup: false, tpl: false }, 'fields and variables');
    assert.deepEqual(functionsIn('{{/* uses lookup and tpl */}}\nlookup: tpl'), { lookup: false, tpl: false }, 'comments and plain text');
    assert.deepEqual(functionsIn('{{ template "x" (tpl\n  .Values.a .) }}'), { lookup: false, tpl: true }, 'across lines');
  });

  it('names the template files of a chart and its subcharts, packaged or not', async () => {
    assert.deepEqual(await templateFunctions(join(CHARTS, 'tenant-note')), { lookup: [], tpl: ['templates/configmap.yaml'] });
    assert.deepEqual(await templateFunctions(join(CHARTS, 'webapp')), { lookup: [], tpl: [] });

    const dir = await mkdtemp(join(tmpdir(), 'chartpilot-tf-'));
    await mkdir(join(dir, 'templates'), { recursive: true });
    await mkdir(join(dir, 'charts', 'db', 'templates'), { recursive: true });
    await writeFile(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: app\nversion: 0.1.0\n');
    await writeFile(join(dir, 'templates', '_helpers.tpl'), '{{- define "app.secret" -}}{{ lookup "v1" "Secret" .Release.Namespace "s" }}{{- end }}');
    await writeFile(join(dir, 'charts', 'db', 'templates', 'cm.yaml'), 'a: {{ tpl .Values.a . }}');
    await writeFile(join(dir, 'charts', 'cache.tgz'), gzipSync(tar([{ name: 'cache/templates/x.yaml', data: '{{ lookup "v1" "ConfigMap" "" "" }}' }])));
    await writeFile(join(dir, 'values.yaml'), 'note: "{{ lookup }}"\n');
    assert.deepEqual(await templateFunctions(dir), {
      lookup: ['charts/cache.tgz/templates/x.yaml', 'templates/_helpers.tpl'],
      tpl: ['charts/db/templates/cm.yaml'],
    });
  });
});
