/** Writing generated files: every generator command writes the same way and says what it wrote. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errorMessage } from '../lib/errors.js';
import { EnvironmentError } from './errors.js';

/** Writes `files` (relative name → text) under `dir`, one `wrote <file>` line each on stderr. */
export async function writeFiles(dir: string, files: ReadonlyMap<string, string>, io: { stderr(line: string): void }): Promise<void> {
  try {
    for (const [name, text] of files) {
      const file = join(dir, name);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, text);
      io.stderr(`wrote ${file}`);
    }
  } catch (err) {
    throw new EnvironmentError(`cannot write to ${dir}: ${errorMessage(err)}`, { cause: err });
  }
}
