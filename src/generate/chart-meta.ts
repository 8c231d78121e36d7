/** What the generators need to know about a chart: its name, default values and values schema. */
import { parse, parseDocument } from 'yaml';
import { fileText, readChartFiles, type ChartFiles } from '../config/chart-files.js';
import { errorMessage } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';

export interface ChartInfo {
  readonly files: ChartFiles;
  readonly name: string;
  readonly version: string;
  /** values.yaml as text ('' when the chart has none), for samples that keep its comments. */
  readonly valuesText: string;
  /** values.yaml parsed ({} when absent or empty). */
  readonly defaults: Record<string, unknown>;
  /** values.schema.json parsed, or undefined when the chart has none. */
  readonly schema: unknown;
}

export class ChartProblem extends Error {
  override readonly name = 'ChartProblem';
}

export async function loadChartInfo(path: string): Promise<ChartInfo> {
  const files = await readChartFiles(path);
  const chartYaml = fileText(files, 'Chart.yaml');
  if (chartYaml === undefined) throw new ChartProblem(`${path} has no Chart.yaml`);
  const meta: unknown = parse(chartYaml, { version: '1.1' });
  const name = isPlainObject(meta) && typeof meta['name'] === 'string' ? meta['name'] : '';
  const rawVersion = isPlainObject(meta) ? meta['version'] : undefined;
  const version = typeof rawVersion === 'string' || typeof rawVersion === 'number' ? String(rawVersion) : '';
  if (name === '') throw new ChartProblem(`${path}: Chart.yaml has no name`);

  const valuesText = fileText(files, 'values.yaml') ?? '';
  // YAML 1.1, as Helm reads values (yes/no are booleans there).
  const doc = parseDocument(valuesText, { version: '1.1' });
  const firstError = doc.errors[0];
  if (firstError !== undefined) {
    throw new ChartProblem(`${path}: values.yaml is not valid YAML (${firstError.message.split('\n')[0] ?? ''})`);
  }
  const parsed: unknown = doc.toJS({ maxAliasCount: 1000 });
  if (parsed !== null && parsed !== undefined && !isPlainObject(parsed)) {
    throw new ChartProblem(`${path}: values.yaml must hold a map of values`);
  }
  const defaults = parsed ?? {};

  let schema: unknown;
  const schemaText = fileText(files, 'values.schema.json');
  if (schemaText !== undefined) {
    try {
      schema = JSON.parse(schemaText);
    } catch (err) {
      throw new ChartProblem(`${path}: values.schema.json is not valid JSON (${errorMessage(err)}); Helm would refuse it too`, { cause: err });
    }
  }
  return { files, name, version, valuesText, defaults, schema };
}
