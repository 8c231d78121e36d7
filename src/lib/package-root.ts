/**
 * Where chartpilot's own files are. The same code runs from two layouts of the package:
 * - tsc's: `<root>/dist/src/<folder>/<module>.js`, one file per module (what the unit tests import);
 * - the bundle's: `<root>/dist/bundle/<entry>.js` (what bin/chartpilot.js and the image run: every
 *   module inlined into one file per entry, so each module's `import.meta.url` is the bundle's).
 * A path taken relative to a module's own URL (`../../../package.json`) is right in one layout
 * only, so every lookup of the package's files goes through here. The layout is told from this
 * module's own path, without touching the disk: both are fixed by the build (tsconfig's outDir,
 * scripts/bundle.ts), and anything else is an error that names the path, never a guess.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The bundle's directory below the package root (scripts/bundle.ts writes there). */
export const BUNDLE_DIR = join('dist', 'bundle');
/** tsc's place for this very module below the package root. */
const TSC_PATH = join('dist', 'src', 'lib', 'package-root.js');

export interface PackageLayout {
  /** The package's root: package.json, bin/, dist/ (and node_modules/, devcluster/ in a checkout). */
  readonly root: string;
  /** Running from the bundle rather than from tsc's output. */
  readonly bundled: boolean;
}

/** The layout this module's file implies; `file` is this module's own path (in the bundle, the bundle's). */
export function layoutOf(file: string): PackageLayout {
  if (file.endsWith(sep + TSC_PATH)) return { root: file.slice(0, -(TSC_PATH.length + 1)), bundled: false };
  const dir = dirname(file);
  if (dir.endsWith(sep + BUNDLE_DIR) && basename(file).endsWith('.js')) return { root: dir.slice(0, -(BUNDLE_DIR.length + 1)), bundled: true };
  throw new Error(`chartpilot runs from ${file}, which is neither tsc's <root>/${TSC_PATH} nor a bundle in <root>/${BUNDLE_DIR}/: cannot tell where its package.json is`);
}

let layout: PackageLayout | undefined;
/** This process's layout, worked out once. */
export function packageLayout(): PackageLayout {
  layout ??= layoutOf(fileURLToPath(import.meta.url));
  return layout;
}

export function packageRoot(): string {
  return packageLayout().root;
}

let version: string | undefined;
/** package.json's version (what `chartpilot version`, image names and scaffolds say); throws when it cannot be read. */
export function packageVersion(): string {
  if (version !== undefined) return version;
  const file = join(packageRoot(), 'package.json');
  const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
  // A wrong root would otherwise hand out some other package's version as chartpilot's.
  if (pkg.name !== 'chartpilot' || typeof pkg.version !== 'string') throw new Error(`${file} is not chartpilot's package.json (name ${JSON.stringify(pkg.name)})`);
  version = pkg.version;
  return version;
}
