import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { parse } from 'yaml';
import { generateCommand } from '../../../src/generate/cli.js';
import { dashboard } from '../../../src/generate/monitoring-dashboard.js';
import { alertRules, DEFAULT_RUNBOOK_URL, runbookAnchor, RUNBOOKS_PAGE, type MonitoringOptions, type RuleGroup } from '../../../src/generate/monitoring.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const ALERT_TESTS = join(REPO_ROOT, 'test/fixtures/monitoring/alerts.test.yml');
const RUNBOOK = 'https://docs.example.com/runbooks.md';

const defaults: MonitoringOptions = { name: 'chartpilot', namespace: 'chartpilot-system', job: 'chartpilot-metrics-service', runbookUrl: RUNBOOK };

function capture(): { io: { stdout: (t: string) => void; stderr: (l: string) => void; env: Record<string, string> }; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    io: { stdout: (t) => (out += t), stderr: (l) => (err += `${l}\n`), env: {} },
    out: () => out,
    err: () => err,
  };
}

async function generate(argv: readonly string[]): Promise<string> {
  const c = capture();
  const code = await generateCommand(['monitoring', ...argv], c.io);
  assert.equal(code, 0, c.err());
  return c.out();
}

/** promtool from Debian's prometheus package; its absence fails the test, naming the fix. */
async function promtool(args: readonly string[], cwd: string): Promise<string> {
  const r = await execa('promtool', [...args], { cwd, reject: false, all: true });
  if (r.failed && (r as { code?: string }).code === 'ENOENT') {
    assert.fail('promtool is not installed: install Debian\'s prometheus package (apt-get install prometheus; .ci/run installs it)');
  }
  assert.equal(r.exitCode, 0, `promtool ${args.join(' ')}:\n${r.all}`);
  return r.all;
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'chartpilot-monitoring-'));
  dirs.push(d);
  return d;
}

describe('generate monitoring: the alerts', () => {
  it('pass promtool check rules, as a rule file and as the PrometheusRule\'s spec', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'rules.yml'), await generate(['--format', 'rule-file']));
    const rule = parse(await generate([])) as { apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec: { groups: RuleGroup[] } };
    assert.deepEqual([rule.apiVersion, rule.kind, rule.metadata.name, rule.metadata.namespace], ['monitoring.coreos.com/v1', 'PrometheusRule', 'chartpilot-alerts', 'chartpilot-system']);
    writeFileSync(join(dir, 'from-prometheus-rule.yml'), JSON.stringify({ groups: rule.spec.groups }));
    assert.match(await promtool(['check', 'rules', 'rules.yml', 'from-prometheus-rule.yml'], dir), /SUCCESS: 9 rules found[\s\S]*SUCCESS: 9 rules found/);
  });

  it('fire and stay quiet as test/fixtures/monitoring/alerts.test.yml says (promtool test rules), every alert tested', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'rules.yml'), await generate(['--format', 'rule-file', '--runbook-url', RUNBOOK]));
    copyFileSync(ALERT_TESTS, join(dir, 'alerts.test.yml'));
    await promtool(['test', 'rules', 'alerts.test.yml'], dir);
    const tested = new Set(
      (parse(readFileSync(ALERT_TESTS, 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }).tests.flatMap((t) =>
        t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname),
      ),
    );
    const alerts = alertRules(defaults).flatMap((g) => g.rules.map((r) => r.alert));
    assert.deepEqual(alerts.filter((a) => !tested.has(a)), [], 'every alert has a test case in which it fires');
  });

  it('each has a summary, a description naming the resource or controller, and a section of the runbooks page', () => {
    const runbooks = readFileSync(join(REPO_ROOT, RUNBOOKS_PAGE), 'utf8');
    const [resources, operator] = alertRules(defaults);
    for (const r of resources?.rules ?? []) assert.match(r.annotations.description, /\{\{ \$labels\.namespace \}\}\/\{\{ \$labels\.name \}\}/, r.alert);
    for (const r of [...(resources?.rules ?? []), ...(operator?.rules ?? [])]) {
      assert.notEqual(r.annotations.summary, '', r.alert);
      assert.equal(r.annotations.runbook_url, `${RUNBOOK}#${runbookAnchor(r.alert)}`);
      // GitHub's anchor of a one-word heading "## <Alert>" is the word in lower case.
      assert.match(runbooks, new RegExp(`^## ${r.alert}$`, 'm'), `${RUNBOOKS_PAGE} has a section for ${r.alert}`);
      assert.equal(runbookAnchor(r.alert), r.alert.toLowerCase());
    }
  });

  it('the runbooks page has a section for every alert and none for an alert that is not generated', () => {
    const sections = [...readFileSync(join(REPO_ROOT, RUNBOOKS_PAGE), 'utf8').matchAll(/^## (.+)$/gmu)].map((m) => m[1]);
    const alerts = alertRules(defaults).flatMap((g) => g.rules.map((r) => r.alert));
    assert.deepEqual([...sections].sort(), [...alerts].sort(), `the "## " sections of ${RUNBOOKS_PAGE} are exactly the alerts`);
  });

  it('links this version\'s runbooks page in the repository by default', () => {
    const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    assert.equal(DEFAULT_RUNBOOK_URL, `https://github.com/chartpilot/chartpilot/blob/v${version}/${RUNBOOKS_PAGE}`);
    assert.ok(existsSync(join(REPO_ROOT, RUNBOOKS_PAGE)), `${RUNBOOKS_PAGE} exists`);
  });

  it('--for replaces every rule\'s for: and nothing else', async () => {
    const normal = parse(await generate(['--format', 'rule-file'])) as { groups: RuleGroup[] };
    const short = parse(await generate(['--format', 'rule-file', '--for', '5s'])) as { groups: RuleGroup[] };
    const rules = (g: { groups: RuleGroup[] }): RuleGroup['rules'][number][] => g.groups.flatMap((x) => [...x.rules]);
    assert.ok(rules(normal).some((r) => r.for !== '5s'));
    assert.deepEqual(
      rules(short).map((r) => r.for),
      rules(normal).map(() => '5s'),
    );
    assert.deepEqual(
      rules(short).map((r) => ({ ...r, for: '' })),
      rules(normal).map((r) => ({ ...r, for: '' })),
    );
  });

  it('refuses a bad duration, format or job, naming the flag and what it takes', async () => {
    for (const [argv, message] of [
      [['--for', '5 minutes'], /--for "5 minutes" is not a Prometheus duration \(e\.g\. 5s, 10m, 1h30m\)/],
      [['--format', 'json'], /--format "json" is not one of prometheus-rule, rule-file, grafana/],
      [['--job', 'a"b'], /--job "a"b" is not a usable job name/],
      [['--runbook-url', 'README.md'], /--runbook-url "README.md" is not an http\(s\) URL/],
    ] as const) {
      const c = capture();
      assert.equal(await generateCommand(['monitoring', ...argv], c.io), 2);
      assert.match(c.err(), message);
    }
  });

  it('names the job after the metrics Service of --name, and the PrometheusRule joins generate deploy with --with-prometheus-rule', async () => {
    const rules = parse(await generate(['--format', 'rule-file', '--name', 'webapp-operator'])) as { groups: RuleGroup[] };
    const absent = rules.groups.flatMap((g) => g.rules).find((r) => r.alert === 'OperatorAbsent');
    assert.equal(absent?.expr, 'absent(up{job="webapp-operator-metrics-service"} == 1)');
    const c = capture();
    assert.equal(await generateCommand(['deploy', '--with-prometheus-rule'], c.io), 0, c.err());
    assert.match(c.out(), /kind: PrometheusRule/);
    const plain = capture();
    assert.equal(await generateCommand(['deploy'], plain.io), 0);
    assert.doesNotMatch(plain.out(), /kind: PrometheusRule/);
  });

  it('--output-dir writes the PrometheusRule, the rule file and the dashboard', async () => {
    const dir = tempDir();
    await generate(['--output-dir', dir]);
    assert.match(readFileSync(join(dir, 'prometheus-rule.yaml'), 'utf8'), /kind: PrometheusRule/);
    assert.match(readFileSync(join(dir, 'rules.yml'), 'utf8'), /alert: ReleaseFailed/);
    assert.equal((JSON.parse(readFileSync(join(dir, 'grafana-dashboard.json'), 'utf8')) as { uid: string }).uid, 'chartpilot-overview');
  });
});

describe('generate monitoring: the dashboard', () => {
  it('has the fleet, one resource and the operator, every panel querying the chosen data source', async () => {
    const d = JSON.parse(await generate(['--format', 'grafana'])) as ReturnType<typeof dashboard>;
    const rows = d.panels.filter((p) => p.type === 'row').map((p) => p.title);
    assert.deepEqual(rows, ['Fleet', 'Resource $namespace/$name', 'Operator']);
    const panels = d.panels.filter((p) => p.type !== 'row');
    assert.ok(panels.length >= 15);
    for (const p of panels) {
      assert.equal(p.datasource?.uid, '${datasource}', p.title);
      assert.ok((p.targets ?? []).length > 0 && (p.targets ?? []).every((t) => t.expr !== ''), p.title);
      assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${p.title} fits the 24 columns`);
    }
    // The one-resource row is driven by the variables.
    const one = panels.filter((p) => (p.targets ?? []).some((t) => t.expr.includes('name="$name"')));
    assert.ok(one.length >= 5);
    assert.equal(new Set(d.panels.map((p) => p.id)).size, d.panels.length, 'panel ids are unique');
  });
});
