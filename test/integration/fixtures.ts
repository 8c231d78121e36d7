// Where the tests' inputs are: the repository, its sample chart, the fixture charts.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** The chartpilot command, as the shebang runs it. */
export const BIN = join(REPO_ROOT, 'bin/chartpilot.js');
/** charts/webapp: the sample chart (Deployment, Service, ConfigMap; a values.schema.json). */
export const SAMPLE_CHART = join(REPO_ROOT, 'charts/webapp');
export const FIXTURE_CHARTS = join(REPO_ROOT, 'test/fixtures/charts');

/** test/fixtures/charts/<name>. */
export function fixtureChart(name: string): string {
  return join(FIXTURE_CHARTS, name);
}
