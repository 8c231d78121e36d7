import assert from 'node:assert/strict';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseBindAddress, parseRunArgs, RUN_HELP, type RunOptions } from '../../../src/cli/args.js';

function options(argv: string[], env: Record<string, string | undefined> = {}): RunOptions {
  const r = parseRunArgs(argv, env);
  assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
  return r.options;
}

function problems(argv: string[], env: Record<string, string | undefined> = {}): string[] {
  const r = parseRunArgs(argv, env);
  assert.equal(r.ok, false, 'expected problems');
  return r.problems;
}

describe('run arguments', () => {
  it('defaults match operator-sdk helm-operator run', () => {
    assert.deepEqual(options([]), {
      watchesFile: './watches.yaml',
      watchesFileGiven: false,
      reconcilePeriodMs: 60_000,
      maxConcurrentReconciles: availableParallelism(),
      stallAfterFailures: 5,
      metricsBindAddress: { host: undefined, port: 8080, text: ':8080' },
      metricsMaxConnections: 64,
      healthProbeBindAddress: { host: undefined, port: 8081, text: ':8081' },
      leaderElect: false,
      leaderElectionId: '',
      leaderElectionNamespace: '',
      shards: false,
      shardLeaseDurationMs: 15_000,
      logLevel: 'info',
      logFormat: 'json',
      helmTimeoutMs: 300_000,
      chartRefreshIntervalMs: 600_000,
      chartCacheDir: join(tmpdir(), 'chartpilot-charts'),
      watchNamespaces: [],
      helmBin: 'helm',
      helmMode: undefined,
      helmWorkers: undefined,
      resourceMetrics: 'attention',
      kubeconfig: undefined,
      suppressOverrideValues: false,
      defaultServiceAccount: undefined,
      sealKeySecret: 'chartpilot-seal-key',
      adoptExistingReleases: false,
      metricsSecure: false,
      metricsRequireRbac: false,
      metricsCertificate: undefined,
      enableHttp2: false,
      ansible: { verbosity: 2, rolesPath: [], collectionsPath: [], args: [], injectOwnerRef: true, proxyPort: 8888, runTimeoutMs: 600_000 },
      gracefulShutdownTimeoutMs: 20_000,
      ignoredFlags: [],
    });
  });

  it('every flag, in both --flag=value and --flag value forms', () => {
    const o = options([
      '--watches-file=/opt/helm/watches.yaml',
      '--reconcile-period',
      '90s',
      '--max-concurrent-reconciles=8',
      '--stall-after-failures',
      '0',
      '--metrics-bind-address',
      '127.0.0.1:9090',
      '--metrics-max-connections=16',
      '--health-probe-bind-address=[::1]:9091',
      '--leader-elect',
      '--leader-election-id=nginx-operator.demo.example.com',
      '--leader-election-namespace',
      'operators',
      '--shard-lease-duration=7s',
      '--log-level=debug',
      '--log-format=console',
      '--helm-timeout=10m',
      '--helm-mode',
      'cli',
      '--helm-workers=3',
      '--resource-metrics',
      'all',
      '--chart-refresh-interval',
      '2m',
      '--chart-cache-dir=/var/cache/charts',
      '--kubeconfig=/home/me/.kube/config',
      '--suppress-override-values',
      '--default-service-account',
      'tenant',
      '--seal-key-secret',
      'my-seal-key',
      '--adopt-existing-releases',
      '--metrics-secure',
      '--metrics-require-rbac',
      '--metrics-cert-path=/certs',
      '--metrics-cert-name',
      'cert.pem',
      '--metrics-cert-key=key.pem',
      '--enable-http2',
      '--graceful-shutdown-timeout=45s',
      '--ansible-verbosity',
      '4',
      '--ansible-roles-path=/opt/roles:/more/roles',
      '--ansible-collections-path',
      '/opt/collections',
      '--ansible-args=--diff  --check',
      '--inject-owner-ref=false',
      '--proxy-port',
      '0',
      '--ansible-run-timeout=3m',
    ]);
    assert.deepEqual(o, {
      watchesFile: '/opt/helm/watches.yaml',
      watchesFileGiven: true,
      reconcilePeriodMs: 90_000,
      maxConcurrentReconciles: 8,
      stallAfterFailures: 0,
      metricsBindAddress: { host: '127.0.0.1', port: 9090, text: '127.0.0.1:9090' },
      metricsMaxConnections: 16,
      healthProbeBindAddress: { host: '::1', port: 9091, text: '[::1]:9091' },
      leaderElect: true,
      leaderElectionId: 'nginx-operator.demo.example.com',
      leaderElectionNamespace: 'operators',
      shards: false,
      shardLeaseDurationMs: 7_000,
      logLevel: 'debug',
      logFormat: 'console',
      helmTimeoutMs: 600_000,
      chartRefreshIntervalMs: 120_000,
      chartCacheDir: '/var/cache/charts',
      watchNamespaces: [],
      helmBin: 'helm',
      helmMode: 'cli',
      helmWorkers: 3,
      resourceMetrics: 'all',
      kubeconfig: '/home/me/.kube/config',
      suppressOverrideValues: true,
      defaultServiceAccount: 'tenant',
      sealKeySecret: 'my-seal-key',
      adoptExistingReleases: true,
      metricsSecure: true,
      metricsRequireRbac: true,
      metricsCertificate: { dir: '/certs', certName: 'cert.pem', keyName: 'key.pem' },
      enableHttp2: true,
      ansible: { verbosity: 4, rolesPath: ['/opt/roles', '/more/roles'], collectionsPath: ['/opt/collections'], args: ['--diff', '--check'], injectOwnerRef: false, proxyPort: 0, runTimeoutMs: 180_000 },
      gracefulShutdownTimeoutMs: 45_000,
      ignoredFlags: [],
    });
  });

  it('--stall-after-failures takes a whole number, 0 included', () => {
    assert.equal(options(['--stall-after-failures=12']).stallAfterFailures, 12);
    assert.deepEqual(problems(['--stall-after-failures=-1']), ['--stall-after-failures is "-1"; expected a whole number (0 for never)']);
  });

  it('--shards: the ring name must fit a label name, the lease duration whole seconds of 2 or more', () => {
    assert.equal(options(['--shards', '--leader-election-id', 'my-operator']).shards, true);
    assert.deepEqual(problems(['--shards', '--leader-election-id', 'my.operator.example.com']), [
      `--shards: the ring name --leader-election-id "my.operator.example.com" must fit a label name: at most 63 lower-case letters, digits or '-' (CRs get the label shard.chartpilot.io/<ring>); choose a shorter id such as my-operator`,
    ]);
    assert.match(problems(['--shards', '--leader-election-id', 'x'.repeat(64)])[0] ?? '', /at most 63/);
    // Without --shards a dotted id is a fine Lease name.
    assert.equal(options(['--leader-election-id', 'my.operator.example.com']).shards, false);
    assert.match(problems(['--shard-lease-duration=1500ms'])[0] ?? '', /whole seconds, at least 2s/);
    assert.match(problems(['--shard-lease-duration=1s'])[0] ?? '', /whole seconds, at least 2s/);
    assert.equal(options(['--shard-lease-duration=3s']).shardLeaseDurationMs, 3000);
  });

  it('refuses a bad Ansible verbosity and proxy port, naming what is expected', () => {
    const r = parseRunArgs(['--ansible-verbosity=9', '--proxy-port=70000', '--ansible-run-timeout=0'], {});
    assert.ok(!r.ok);
    const problems = r.problems;
    assert.ok(problems.some((p) => /--ansible-verbosity is "9"; expected a whole number from 0 to 7/u.test(p)), problems.join('\n'));
    assert.ok(problems.some((p) => /--proxy-port is "70000"/u.test(p)), problems.join('\n'));
    assert.ok(problems.some((p) => /--ansible-run-timeout/u.test(p)), problems.join('\n'));
  });

  it('the args of an operator-sdk scaffolded manager Deployment are accepted', () => {
    const o = options([
      '--metrics-require-rbac',
      '--metrics-secure',
      '--metrics-bind-address=:8443',
      '--leader-elect',
      '--leader-election-id=nginx-operator',
      '--health-probe-bind-address=:8081',
      '--zap-log-level=info',
      '--zap-encoder=console',
    ]);
    assert.equal(o.metricsBindAddress?.port, 8443);
    assert.equal(o.metricsSecure, true);
    assert.equal(o.metricsRequireRbac, true);
    assert.equal(o.metricsCertificate, undefined, 'self-signed');
    assert.equal(o.enableHttp2, false);
    assert.equal(o.leaderElect, true);
    assert.equal(o.leaderElectionId, 'nginx-operator');
    assert.equal(o.logFormat, 'console', 'the scaffold asks for console logs: it gets them');
    assert.deepEqual(o.ignoredFlags, []);
  });

  it('logs are JSON unless --log-format, operator-sdk\'s --zap-encoder or --zap-devel ask for readable lines', () => {
    assert.equal(options([]).logFormat, 'json');
    assert.equal(options(['--log-format=console']).logFormat, 'console');
    assert.equal(options(['--zap-encoder=console']).logFormat, 'console');
    assert.equal(options(['--zap-encoder', 'json']).logFormat, 'json');
    assert.equal(options(['--zap-devel']).logFormat, 'console', "zap's development config writes console lines");
    assert.equal(options(['--zap-devel', '--zap-encoder=json']).logFormat, 'json');
    assert.equal(options(['--zap-devel', '--log-format=json']).logFormat, 'json');
    assert.deepEqual(problems(['--log-format=pretty']), ['--log-format is "pretty"; expected one of json, console']);
    assert.deepEqual(problems(['--log-format=json', '--zap-encoder=console']), ['only one of --log-format and --zap-encoder may be set (they set the same thing)']);
  });

  it('0 disables the metrics and probe endpoints and the periodic requeue', () => {
    const o = options(['--metrics-bind-address=0', '--health-probe-bind-address', '0', '--reconcile-period=0']);
    assert.equal(o.metricsBindAddress, undefined);
    assert.equal(o.healthProbeBindAddress, undefined);
    assert.equal(o.reconcilePeriodMs, 0);
  });

  it('boolean flags take Go-style =true / =false', () => {
    assert.equal(options(['--leader-elect=false']).leaderElect, false);
    assert.equal(options(['--leader-elect=true']).leaderElect, true);
    assert.equal(options(['--leader-elect=1']).leaderElect, true);
    assert.equal(options(['--leader-elect=F']).leaderElect, false);
    assert.deepEqual(problems(['--leader-elect=maybe']), [
      '--leader-elect is a boolean flag; found "maybe", expected --leader-elect, --leader-elect=true or --leader-elect=false',
    ]);
  });

  it('the last of a repeated flag wins, as with Go flags', () => {
    assert.equal(options(['--watches-file=a.yaml', '--watches-file=b.yaml']).watchesFile, 'b.yaml');
  });

  it('deprecated operator-sdk spellings still work, but not together with the new ones', () => {
    const o = options(['--metrics-addr=:9000', '--enable-leader-election']);
    assert.equal(o.metricsBindAddress?.port, 9000);
    assert.equal(o.leaderElect, true);
    assert.deepEqual(problems(['--metrics-addr=:9000', '--metrics-bind-address=:9001', '--enable-leader-election', '--leader-elect']), [
      'only one of --metrics-bind-address and --metrics-addr may be set (--metrics-addr is the deprecated spelling)',
      'only one of --leader-elect and --enable-leader-election may be set (--enable-leader-election is the deprecated spelling)',
    ]);
  });

  it('--zap-log-level is an alias of --log-level, with zap level names', () => {
    assert.equal(options(['--zap-log-level=debug']).logLevel, 'debug');
    assert.equal(options(['--zap-log-level=error']).logLevel, 'error');
    assert.equal(options(['--zap-log-level=panic']).logLevel, 'error');
    assert.equal(options(['--zap-log-level=3']).logLevel, 'debug');
    assert.equal(options(['--zap-devel']).logLevel, 'debug');
    assert.equal(options(['--zap-devel', '--log-level=warn']).logLevel, 'warn');
    assert.deepEqual(problems(['--zap-log-level=0']), [
      '--zap-log-level is "0"; expected debug, info, warn, error, panic or an integer > 0',
    ]);
    assert.deepEqual(problems(['--log-level=info', '--zap-log-level=debug']), [
      'only one of --log-level and --zap-log-level may be set (they set the same thing)',
    ]);
  });

  it('flags with no effect are accepted, validated and reported as ignored', () => {
    const o = options(['--zap-encoder=json', '--zap-stacktrace-level=error', '--zap-time-encoding=rfc3339', '--enable-http2']);
    assert.deepEqual(o.ignoredFlags, ['--zap-stacktrace-level', '--zap-time-encoding', '--enable-http2 (without --metrics-secure)']);
    assert.deepEqual(options(['--metrics-secure', '--enable-http2']).ignoredFlags, [], 'HTTP/2 does take effect on the HTTPS server');
    assert.deepEqual(problems(['--zap-encoder=xml', '--zap-time-encoding=unix']), [
      '--zap-encoder is "xml"; expected one of json, console',
      '--zap-time-encoding is "unix"; expected one of epoch, millis, nano, iso8601, rfc3339, rfc3339nano',
    ]);
  });

  it('bad values name the flag and what is expected, all at once', () => {
    assert.deepEqual(
      problems([
        '--reconcile-period=1 minute',
        '--max-concurrent-reconciles=0',
        '--metrics-bind-address=8080',
        '--log-level=verbose',
        '--helm-timeout=0',
      ]),
      [
        '--reconcile-period "1 minute" is not a Go duration (unknown unit " minute"); write a number followed by a unit (ns, us, ms, s, m, h), such as 30s, 1m30s, 2h or 500ms',
        '--helm-timeout is "0"; expected a positive duration, e.g. --helm-timeout=5m',
        '--max-concurrent-reconciles is "0"; expected a whole number of at least 1',
        '--metrics-bind-address "8080" is not a listen address (no port); expected host:port such as :8080, 127.0.0.1:8080 or [::1]:8080, or 0 to disable',
        '--log-level is "verbose"; expected one of debug, info, warn, error',
      ],
    );
  });

  it('negative and malformed numbers are refused', () => {
    assert.match(problems(['--reconcile-period=-1m'])[0] ?? '', /^--reconcile-period is "-1m"; expected a duration of 0 or more/u);
    assert.deepEqual(problems(['--reconcile-period=1ms', '--chart-refresh-interval=1s']), [
      '--reconcile-period is "1ms", below the minimum of 5s (each period costs work per resource); use 5s or more, or 0 to turn it off',
      '--chart-refresh-interval is "1s", below the minimum of 2s (each period costs work per resource); use 2s or more, or 0 to turn it off',
    ]);
    assert.equal(options(['--reconcile-period=5s']).reconcilePeriodMs, 5_000, 'the minimum itself is fine');
    assert.match(problems(['--max-concurrent-reconciles=two'])[0] ?? '', /^--max-concurrent-reconciles is "two"/u);
    assert.match(problems(['--max-concurrent-reconciles=1.5'])[0] ?? '', /^--max-concurrent-reconciles is "1\.5"/u);
  });

  it('unknown flags are named, with the nearest real flag', () => {
    assert.deepEqual(problems(['--watch-file=w.yaml', '--reconcile-periods', '1m', '--frobnicate', '-x']), [
      'unknown flag --watch-file; did you mean --watches-file?',
      'unknown flag --reconcile-periods; did you mean --reconcile-period?',
      'unknown flag --frobnicate; see chartpilot run --help',
      'unknown flag -x; see chartpilot run --help',
    ]);
  });

  it('stray arguments and missing values are reported', () => {
    assert.deepEqual(problems(['extra']), ['unexpected argument "extra"; chartpilot run takes only flags (see --help)']);
    assert.deepEqual(problems(['--', 'extra']), ['unexpected argument "extra"; chartpilot run takes only flags (see --help)']);
    assert.deepEqual(problems(['--leader-elect', 'true']), [
      'unexpected argument "true"; chartpilot run takes only flags (see --help)',
    ]);
    assert.deepEqual(problems(['--watches-file']), ['--watches-file needs a value, e.g. --watches-file=./watches.yaml']);
    assert.deepEqual(problems(['--watches-file', '--leader-elect']), [
      '--watches-file is followed by the flag --leader-elect instead of a value; write --watches-file=<path>',
    ]);
    assert.deepEqual(problems(['--watches-file=']), ['--watches-file is empty; give the path of watches.yaml']);
  });

  it('--help and -h ask for help, whatever else is on the line', () => {
    assert.deepEqual(parseRunArgs(['--help'], {}), { ok: false, problems: [], help: true });
    assert.deepEqual(parseRunArgs(['--bogus', '-h'], {}), { ok: false, problems: [], help: true });
  });

  it('--metrics-require-rbac needs --metrics-secure, as in operator-sdk', () => {
    assert.deepEqual(problems(['--metrics-require-rbac']), [
      '--metrics-require-rbac needs --metrics-secure: scrapes carry bearer tokens, which must not cross the network in clear; add --metrics-secure',
    ]);
  });

  it('the metrics certificate flags are checked together', () => {
    assert.deepEqual(options(['--metrics-secure', '--metrics-cert-path=/c']).metricsCertificate, { dir: '/c', certName: 'tls.crt', keyName: 'tls.key' });
    assert.deepEqual(problems(['--metrics-cert-path=/c']), ['--metrics-cert-path needs --metrics-secure: the certificate is only used for HTTPS']);
    assert.deepEqual(problems(['--metrics-secure', '--metrics-cert-name=a.crt', '--metrics-cert-key=a.key']), [
      '--metrics-cert-name is only read with --metrics-cert-path; add the directory holding a.crt',
      '--metrics-cert-key is only read with --metrics-cert-path; add the directory holding a.key',
    ]);
    assert.deepEqual(problems(['--metrics-secure', '--metrics-cert-path=', '--metrics-cert-name=../x.crt']), [
      '--metrics-cert-name is "../x.crt"; give a file name inside --metrics-cert-path, e.g. --metrics-cert-name=tls.crt',
      '--metrics-cert-path is empty; give the directory of the mounted certificate, or leave the flag out for a self-signed one',
    ]);
  });

  it('--seal-key-secret must name a Secret', () => {
    assert.match(problems(['--seal-key-secret=Not_A_Name']).join('\n'), /--seal-key-secret is "Not_A_Name"; give a Secret name/);
  });

  it('--default-service-account must name a ServiceAccount', () => {
    assert.deepEqual(problems(['--default-service-account=Tenant_1']), [
      '--default-service-account is "Tenant_1"; give the name of a ServiceAccount (lower-case DNS name, e.g. tenant) that each watched namespace has, or leave the flag out',
    ]);
    assert.match(RUN_HELP, /--default-service-account <name>/);
  });

  it('leader election names are checked', () => {
    assert.match(problems(['--leader-election-id=My_Operator'])[0] ?? '', /^--leader-election-id is "My_Operator"; a Lease name must be a lower-case DNS name/u);
    assert.match(problems(['--leader-election-namespace=a.b'])[0] ?? '', /^--leader-election-namespace is "a\.b"/u);
  });

  it('OPERATOR_NAME is the leader election id unless the flag is given', () => {
    assert.equal(options([], { OPERATOR_NAME: 'legacy-operator' }).leaderElectionId, 'legacy-operator');
    assert.equal(options(['--leader-election-id=new'], { OPERATOR_NAME: 'legacy-operator' }).leaderElectionId, 'new');
    assert.match(problems([], { OPERATOR_NAME: 'Bad Name' })[0] ?? '', /^OPERATOR_NAME is "Bad Name"/u);
  });

  it('WATCH_NAMESPACE: comma list, trimmed, empty means all namespaces', () => {
    assert.deepEqual(options([], { WATCH_NAMESPACE: '' }).watchNamespaces, []);
    assert.deepEqual(options([], { WATCH_NAMESPACE: ' , ' }).watchNamespaces, []);
    assert.deepEqual(options([], { WATCH_NAMESPACE: 'team-a' }).watchNamespaces, ['team-a']);
    assert.deepEqual(options([], { WATCH_NAMESPACE: ' team-a , team-b,,team-a ' }).watchNamespaces, ['team-a', 'team-b']);
    assert.deepEqual(problems([], { WATCH_NAMESPACE: 'team-a,Team_B' }), [
      'WATCH_NAMESPACE holds "Team_B", which is not a namespace name (lower-case letters, digits and \'-\'); separate namespaces with commas, or leave it empty to watch all',
    ]);
  });

  it('HELM_BIN chooses the helm binary; empty means helm from PATH', () => {
    assert.equal(options([], { HELM_BIN: '/usr/local/bin/helm3' }).helmBin, '/usr/local/bin/helm3');
    assert.equal(options([], { HELM_BIN: '  ' }).helmBin, 'helm');
    assert.equal(options([], {}).helmBin, 'helm');
    assert.equal(options(['--helm-mode=warm'], {}).helmMode, 'warm');
    assert.equal(options(['--helm-mode=engine'], {}).helmMode, 'engine');
    assert.deepEqual(problems(['--helm-mode=hot']), ['--helm-mode is "hot"; expected one of engine, warm, cli']);
    assert.deepEqual(problems(['--resource-metrics=some']), ['--resource-metrics is "some"; expected one of attention, all']);
    assert.deepEqual(problems(['--helm-workers=0']), ['--helm-workers is "0"; expected a whole number of at least 1']);
  });

  it('bind addresses as Go net.Listen takes them', () => {
    assert.deepEqual(parseBindAddress(':8080'), { ok: true, address: { host: undefined, port: 8080, text: ':8080' } });
    assert.deepEqual(parseBindAddress('127.0.0.1:0'), { ok: true, address: { host: '127.0.0.1', port: 0, text: '127.0.0.1:0' } });
    assert.deepEqual(parseBindAddress('[::1]:9090'), { ok: true, address: { host: '::1', port: 9090, text: '[::1]:9090' } });
    assert.deepEqual(parseBindAddress('[::]:80'), { ok: true, address: { host: '::', port: 80, text: '[::]:80' } });
    assert.deepEqual(parseBindAddress('localhost:8080'), {
      ok: true,
      address: { host: 'localhost', port: 8080, text: 'localhost:8080' },
    });
    assert.deepEqual(parseBindAddress('0'), { ok: true, address: undefined });
    const reasons = ['8080', '::1:9090', '[::1:9090', '[nope]:1', ':http', ':65536', 'bad_host:80', ''].map((t) => {
      const r = parseBindAddress(t);
      assert.equal(r.ok, false, t);
      return r.reason;
    });
    assert.deepEqual(
      reasons.map((r) => /\((.*)\)/u.exec(r)?.[1]),
      [
        'no port',
        'an IPv6 host must be in brackets, e.g. [::1]:8080',
        'unclosed "["',
        '"nope" is not an IPv6 address',
        'port "http" is not a number from 0 to 65535',
        'port "65536" is not a number from 0 to 65535',
        '"bad_host" is not a host name or IP address',
        'no port',
      ],
    );
  });

  it('RUN_HELP lists every advertised flag with its default', () => {
    for (const line of [
      '--watches-file <path>',
      'default: ./watches.yaml, else $HOME/watches.yaml, else /opt/chartpilot/watches.yaml',
      '--reconcile-period <duration>',
      'default 1m',
      '--max-concurrent-reconciles <int>',
      'the number of CPUs',
      '--metrics-bind-address <addr>',
      'default :8080',
      '--health-probe-bind-address <addr>',
      'default :8081',
      '--leader-elect ',
      '--leader-election-id <name>',
      '--leader-election-namespace <ns>',
      '--log-level <level>',
      'default info',
      '--helm-timeout <duration>',
      'default 5m',
      '--helm-mode <mode>',
      'engine when a chartpilot-helm with one is found, else warm when a chartpilot-helm is, else cli',
      '--helm-workers <int>',
      'two per CPU',
      '--resource-metrics <detail>',
      'default attention',
      '--zap-log-level <level>',
      '-h, --help',
      'WATCH_NAMESPACE',
      'HELM_BIN',
    ]) {
      assert.ok(RUN_HELP.includes(line), `RUN_HELP lacks ${JSON.stringify(line)}`);
    }
    assert.ok(!RUN_HELP.includes('--metrics-addr'), 'deprecated spellings are not advertised');
  });

  it('names a bad value by the spelling it was given under', () => {
    assert.match(problems(['--metrics-addr=8080'])[0] ?? '', /^--metrics-addr "8080" is not a listen address/u);
    assert.deepEqual(problems(['--metrics-addr=:9000', '--metrics-bind-address=8080']), [
      'only one of --metrics-bind-address and --metrics-addr may be set (--metrics-addr is the deprecated spelling)',
      '--metrics-bind-address "8080" is not a listen address (no port); expected host:port such as :8080, 127.0.0.1:8080 or [::1]:8080, or 0 to disable',
    ]);
    assert.deepEqual(problems(['--metrics-addr']), ['--metrics-addr needs a value, e.g. --metrics-addr=:8080']);
  });
});
