/**
 * An in-memory stand-in for Helm plus its release Secrets, for unit tests of the reconciler's
 * decisions only. Integration tests use the real helm binary against a real API server.
 */
import { HelmError, type HelmClient, type Release, type UpgradeInstallRequest } from '../../../src/helm/types.js';
import type { ReleaseStore } from '../../../src/engines/helm/ports.js';
import type { StoredRevision } from '../../../src/core/model.js';

interface Stored extends StoredRevision {
  readonly values: unknown;
}

export class HelmWorld {
  readonly calls: string[] = [];
  /** `<namespace>/<release> <chart>` of every upgradeInstall, in order: which chart each was given. */
  readonly charts: string[] = [];
  /** Next upgradeInstall fails with this error (and records a failed revision when `recorded`). */
  failNext: { error: HelmError; recorded: boolean } | undefined;
  private readonly releases = new Map<string, Stored[]>();
  now = Date.parse('2026-01-01T10:00:00Z');

  history(namespace: string, name: string): Stored[] {
    return this.releases.get(`${namespace}/${name}`) ?? [];
  }

  seed(namespace: string, name: string, revs: Stored[]): void {
    this.releases.set(`${namespace}/${name}`, revs);
  }

  private toRelease(namespace: string, name: string, r: Stored): Release {
    return {
      name,
      namespace,
      revision: r.revision,
      status: r.status as Release['status'],
      chartName: 'webapp',
      chartVersion: '0.1.0',
      appVersion: '1.0',
      notes: `notes for ${name}`,
      manifest: '',
      description: '',
    };
  }

  readonly helm: HelmClient = {
    upgradeInstall: (req: UpgradeInstallRequest) => {
      this.calls.push(`upgradeInstall ${req.namespace}/${req.release}`);
      this.charts.push(`${req.namespace}/${req.release} ${req.chart}`);
      const key = `${req.namespace}/${req.release}`;
      const revs = [...this.history(req.namespace, req.release)];
      const next = Math.max(0, ...revs.map((r) => r.revision)) + 1;
      const fail = this.failNext;
      this.failNext = undefined;
      if (fail !== undefined) {
        if (fail.recorded) {
          revs.push({ revision: next, status: 'failed', fingerprint: req.releaseLabels?.['chartpilot.io/fingerprint'], ownerKind: req.releaseLabels?.['chartpilot.io/owner-kind'], createdAt: new Date(this.now).toISOString(), secretName: `s${next}`, values: req.values });
          this.releases.set(key, revs);
        }
        return Promise.reject(fail.error);
      }
      const updated = revs.map((r) => (r.status === 'deployed' ? { ...r, status: 'superseded' } : r));
      const stored: Stored = {
        revision: next,
        status: 'deployed',
        fingerprint: req.releaseLabels?.['chartpilot.io/fingerprint'],
        ownerKind: req.releaseLabels?.['chartpilot.io/owner-kind'],
        createdAt: new Date(this.now).toISOString(),
        secretName: `s${next}`,
        values: req.values,
      };
      updated.push(stored);
      this.releases.set(key, updated);
      return Promise.resolve(this.toRelease(req.namespace, req.release, stored));
    },
    uninstall: (req) => {
      this.calls.push(`uninstall ${req.namespace}/${req.release}`);
      const had = this.releases.delete(`${req.namespace}/${req.release}`);
      return Promise.resolve(had ? 'uninstalled' : 'not-found');
    },
    rollback: (req) => {
      this.calls.push(`rollback ${req.namespace}/${req.release} ${req.revision ?? ''}`);
      const revs = this.history(req.namespace, req.release).map((r) => (r.status === 'deployed' ? { ...r, status: 'superseded' } : r));
      const target = revs.find((r) => r.revision === req.revision);
      if (target === undefined) return Promise.reject(new HelmError('failed', `release has no revision ${String(req.revision)}`, 'rollback'));
      const next = Math.max(...revs.map((r) => r.revision)) + 1;
      revs.push({ ...target, revision: next, status: 'deployed', secretName: `s${next}` });
      this.releases.set(`${req.namespace}/${req.release}`, revs);
      return Promise.resolve();
    },
    status: ({ release, namespace }) => {
      this.calls.push(`status ${namespace}/${release}`);
      const revs = this.history(namespace, release);
      const latest = revs.at(-1);
      return Promise.resolve(latest === undefined ? undefined : this.toRelease(namespace, release, latest));
    },
    history: ({ release, namespace }) => Promise.resolve(this.history(namespace, release).map((r) => this.toRelease(namespace, release, r))),
    template: () => Promise.resolve(''),
  };

  /** How often the reconciler listed stored revisions. */
  revisionReads = 0;

  readonly store: ReleaseStore = {
    revisions: (namespace, release) => {
      this.revisionReads++;
      return Promise.resolve(this.history(namespace, release).map(({ values: _v, ...r }) => r));
    },
    deleteRevision: (namespace, revision) => {
      this.calls.push(`deleteRevision ${namespace} ${revision.revision}`);
      for (const [k, list] of this.releases) {
        if (!k.startsWith(`${namespace}/`)) continue;
        this.releases.set(k, list.filter((r) => r.secretName !== revision.secretName));
      }
      return Promise.resolve();
    },
    foreignRevisions: (_namespace, _release, _ownerUid, revisions) =>
      Promise.resolve(revisions.filter((r) => this.foreignSecrets.has(r.secretName))),
  };

  /** When the operation of a record (by Secret name) began, as its record says. */
  readonly operationStarts = new Map<string, number>();

  /** Records (by Secret name) that do not prove they were written for the CR asking. */
  readonly foreignSecrets = new Set<string>();
}

export { HelmError };
