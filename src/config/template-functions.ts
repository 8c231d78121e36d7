/**
 * Which of a chart's templates (subcharts included) call `lookup` or `tpl`. Both let a CR author
 * reach past the chart's objects when helm runs as the operator: `lookup` reads the cluster with
 * helm's identity, and `tpl` renders a string — typically a value, i.e. the CR's spec — as a
 * template, in which the author may call `lookup` on anything the operator can read. Found by
 * reading the template actions (`{{ … }}`, comments and string literals left out), not by
 * rendering, so branches not taken with the default values count too.
 */
import { readArchive, readChartFiles } from './chart-files.js';

export interface TemplateFunctions {
  /** Template files (chart-relative, `charts/<sub>/…` for subcharts) that call `lookup`. */
  readonly lookup: readonly string[];
  /** Template files that call `tpl`. */
  readonly tpl: readonly string[];
}

const COMMENT = /\{\{-?\s*\/\*[\s\S]*?\*\/\s*-?\}\}/gu;
const ACTION = /\{\{([\s\S]*?)\}\}/gu;
const STRING = /"(?:[^"\\]|\\.)*"|`[^`]*`/gu;
/** A function name as a call: not a field (`.Values.tpl`), a variable (`$lookup`) or part of a word. */
const call = (fn: string): RegExp => new RegExp(`(?:^|[^\\w.$])${fn}(?![\\w])`, 'u');
const LOOKUP = call('lookup');
const TPL = call('tpl');

/** Whether one template's actions call `lookup` and `tpl`. */
export function functionsIn(text: string): { lookup: boolean; tpl: boolean } {
  let lookup = false;
  let tpl = false;
  for (const m of text.replace(COMMENT, '').matchAll(ACTION)) {
    const code = (m[1] ?? '').replace(STRING, '""');
    lookup ||= LOOKUP.test(code);
    tpl ||= TPL.test(code);
  }
  return { lookup, tpl };
}

export async function templateFunctions(chartPath: string): Promise<TemplateFunctions> {
  const lookup: string[] = [];
  const tpl: string[] = [];
  await scan((await readChartFiles(chartPath)).files, '', lookup, tpl);
  return { lookup, tpl };
}

async function scan(files: ReadonlyMap<string, Uint8Array>, prefix: string, lookup: string[], tpl: string[]): Promise<void> {
  for (const [name, data] of [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const parts = name.split('/');
    if (parts.length === 2 && parts[0] === 'charts' && name.endsWith('.tgz')) {
      // A packaged subchart; one that cannot be read fails helm too, which says so better.
      const sub = await readArchive(data, name).catch(() => undefined);
      if (sub !== undefined) await scan(sub, `${prefix}${name}/`, lookup, tpl);
      continue;
    }
    if (!parts.slice(0, -1).includes('templates')) continue;
    const found = functionsIn(new TextDecoder().decode(data));
    if (found.lookup) lookup.push(`${prefix}${name}`);
    if (found.tpl) tpl.push(`${prefix}${name}`);
  }
}
