/**
 * Command-line flags described once, in a table: parsing, defaults and the --help text all come
 * from it, so a default cannot say one thing in --help and do another. The conventions are Go's
 * pflag ones, because the flags are operator-sdk's: --flag=value or --flag value, booleans also
 * --flag=false, the last repeat wins. Every mistake is reported at once, not just the first.
 */
import { parseArgs } from 'node:util';
import { closest } from '../config/suggest.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** An environment variable: read when its flag is not given, or a setting of its own. */
export interface EnvDef {
  readonly name: string;
  readonly help: string;
  /** Value when unset (env-only settings). */
  readonly default?: string;
  /** Shown in --help instead of `default`. */
  readonly defaultHelp?: string;
}

export interface FlagDef<N extends string = string> {
  readonly name: N;
  readonly type: 'string' | 'boolean';
  /** One-letter spelling, e.g. `h` for -h. */
  readonly short?: string;
  /**
   * Older spellings: accepted, never advertised, and not together with the flag itself. `why`
   * ends the message when both are given.
   */
  readonly aliases?: readonly { readonly name: string; readonly why: string }[];
  /** `<placeholder>` after the flag in --help, and in "write --flag=<placeholder>" hints. */
  readonly placeholder?: string;
  /**
   * The value when the flag is not given (nor its environment variable), shown in --help as
   * "(default …)" unless ''. A boolean flag without one is false and --help says nothing about it.
   */
  readonly default?: string | boolean;
  /** Shown in --help as "(default: …)" instead of `default`, for defaults that are computed or need words. */
  readonly defaultHelp?: string;
  /** One line of --help; a flag without it is accepted but not advertised. */
  readonly help?: string;
  /** Read when the flag is not given. */
  readonly env?: EnvDef;
  /** A valid value, for "e.g. --flag=…" hints; default: `default`, else `<value>`. */
  readonly example?: string;
  /** The only values accepted (checked by `FlagValues.choice`). */
  readonly choices?: readonly string[];
  /** Accepted for compatibility but without effect: listed by `FlagValues.ignored` when given. */
  readonly ignored?: boolean;
}

/** What was given for a flag, under which spelling. */
interface Given {
  readonly value: string | boolean;
  readonly spelling: string;
}

// Go's strconv.ParseBool, which pflag uses for --flag=value on boolean flags.
const GO_TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const GO_FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** A flag named `help` (or its short form) asks for help, whatever else is on the line. */
const HELP = 'help';

/** The command line read against a table: values by flag name, with defaults and environment applied. */
export class FlagValues<N extends string> {
  constructor(
    private readonly defs: ReadonlyMap<N, FlagDef<N>>,
    private readonly given: ReadonlyMap<N, readonly Given[]>,
    private readonly env: Env,
  ) {}

  /** Given on the command line, under any spelling. */
  has(name: N): boolean {
    return this.given.has(name);
  }

  /** The value given (the flag's own spelling first), else its environment variable's, else its default. */
  string(name: N): string | undefined {
    const v = this.value(name);
    return typeof v === 'string' ? v : undefined;
  }

  /** `string(name)` of a flag the table gives a default: never undefined. */
  defaulted(name: N): string {
    const v = this.string(name);
    if (v === undefined) throw new Error(`flag --${name} has no string default in the table`);
    return v;
  }

  boolean(name: N): boolean {
    return this.value(name) === true;
  }

  /** How a message names the source of `name`'s value: the spelling given, the environment variable, or the flag. */
  label(name: N): string {
    const g = this.current(name);
    if (g !== undefined) return `--${g.spelling}`;
    const env = this.def(name).env;
    if (env !== undefined && this.env[env.name] !== undefined) return env.name;
    return `--${name}`;
  }

  /** A valid value of `name`, for hints. */
  example(name: N): string {
    return exampleOf(this.def(name));
  }

  /** Checks `name`'s value against its choices; returns it either way. */
  choice(name: N, problems: string[]): string | undefined {
    const value = this.string(name);
    const choices = this.def(name).choices ?? [];
    if (value !== undefined && !choices.includes(value)) problems.push(`${this.label(name)} is "${value}"; expected one of ${choices.join(', ')}`);
    return value;
  }

  /** The flags marked `ignored` that were given, as `--name`, in table order. */
  ignored(): string[] {
    return [...this.defs.values()].filter((d) => d.ignored === true && this.has(d.name)).map((d) => `--${d.name}`);
  }

  private value(name: N): string | boolean | undefined {
    const g = this.current(name);
    if (g !== undefined) return g.value;
    const def = this.def(name);
    const fromEnv = def.env === undefined ? undefined : this.env[def.env.name];
    return fromEnv ?? def.default;
  }

  /** The last value given under the flag's own spelling, else under an alias. */
  private current(name: N): Given | undefined {
    const all = this.given.get(name) ?? [];
    return all.findLast((g) => g.spelling === name) ?? all.at(-1);
  }

  private def(name: N): FlagDef<N> {
    const def = this.defs.get(name);
    if (def === undefined) throw new Error(`no flag --${name} in the table`);
    return def;
  }
}

export type FlagParseResult<N extends string> =
  | { readonly help: true }
  | { readonly help: false; readonly values: FlagValues<N>; readonly problems: string[] };

/**
 * Reads `argv` against `defs`. `command` names the command in hints ("see chartpilot run --help").
 * Problems of the line itself come first, in order, then those of aliases given together with
 * their flag; what the values mean is for the caller to check.
 */
export function parseFlags<N extends string>(defs: readonly FlagDef<N>[], argv: readonly string[], env: Env, command: string): FlagParseResult<N> {
  const byName = new Map(defs.map((d) => [d.name, d]));
  const spellings = spellingsOf(defs);
  const shorts = new Set(defs.flatMap((d) => (d.short === undefined ? [] : [d.short])));
  const problems: string[] = [];
  const given = new Map<N, Given[]>();

  // Non-strict parsing with tokens, then our own strict checks: node's strict mode stops at the
  // first mistake and cannot take Go's `--bool=false`; this reports every mistake and takes it.
  const { tokens } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      [...spellings].map(([spelling, d]) => [spelling, spelling === d.name && d.short !== undefined ? { type: d.type, short: d.short } : { type: d.type }]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });

  let skipNextPositional = false;
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      if (!skipNextPositional) problems.push(`unexpected argument "${token.value}"; ${command} takes only flags (see --help)`);
      skipNextPositional = false;
      continue;
    }
    skipNextPositional = false;
    const def = spellings.get(token.name);
    if (def === undefined) {
      const guess = closest(token.name, [...spellings.keys()]);
      problems.push(`unknown flag ${token.rawName}` + (guess === undefined ? `; see ${command} --help` : `; did you mean --${guess}?`));
      skipNextPositional = token.value === undefined; // its value, most likely
      continue;
    }
    if (def.name === HELP) return { help: true };
    const spelling = token.name;
    const value = tokenValue(def, spelling, token.value, token.inlineValue === true, spellings, shorts, problems);
    if (value === undefined) continue;
    const list = given.get(def.name) ?? [];
    list.push({ value, spelling });
    given.set(def.name, list);
  }

  problems.push(...aliasConflicts(defs, given));
  return { help: false, values: new FlagValues(byName, given, env), problems };
}

/** A flag given under both its own spelling and an alias, in table order. */
function aliasConflicts<N extends string>(defs: readonly FlagDef<N>[], given: ReadonlyMap<N, readonly Given[]>): string[] {
  return defs.flatMap((d) => {
    const spelt = new Set((given.get(d.name) ?? []).map((g) => g.spelling));
    return (d.aliases ?? []).filter((a) => spelt.has(d.name) && spelt.has(a.name)).map((a) => `only one of --${d.name} and --${a.name} may be set (${a.why})`);
  });
}

/** Spelling → flag; aliases after every flag, so "did you mean" prefers the current spellings. */
function spellingsOf<N extends string>(defs: readonly FlagDef<N>[]): Map<string, FlagDef<N>> {
  return new Map<string, FlagDef<N>>([
    ...defs.map((d): [string, FlagDef<N>] => [d.name, d]),
    ...defs.flatMap((d) => (d.aliases ?? []).map((a): [string, FlagDef<N>] => [a.name, d])),
  ]);
}

/** The value of one flag token, or undefined (with a problem) when it has none that fits. */
function tokenValue<N extends string>(
  def: FlagDef<N>,
  spelling: string,
  raw: string | undefined,
  inline: boolean,
  spellings: ReadonlyMap<string, FlagDef<N>>,
  shorts: ReadonlySet<string>,
  problems: string[],
): string | boolean | undefined {
  if (def.type === 'boolean') {
    if (raw === undefined || GO_TRUE.has(raw)) return true;
    if (GO_FALSE.has(raw)) return false;
    problems.push(`--${spelling} is a boolean flag; found "${raw}", expected --${spelling}, --${spelling}=true or --${spelling}=false`);
    return undefined;
  }
  if (raw === undefined) {
    problems.push(`--${spelling} needs a value, e.g. --${spelling}=${exampleOf(def)}`);
    return undefined;
  }
  if (!inline && /^--?[a-z]/u.test(raw)) {
    const flag = raw.replace(/^-+/u, '').split('=')[0] ?? '';
    if (spellings.has(flag) || shorts.has(flag)) {
      problems.push(`--${spelling} is followed by the flag ${raw} instead of a value; write --${spelling}=<${def.placeholder ?? 'value'}>`);
      return undefined;
    }
  }
  return raw;
}

function exampleOf(def: FlagDef): string {
  if (def.example !== undefined) return def.example;
  return typeof def.default === 'string' && def.default !== '' ? def.default : '<value>';
}

function defaultSuffix(d: { readonly default?: string | boolean; readonly defaultHelp?: string }): string {
  if (d.defaultHelp !== undefined) return ` (default: ${d.defaultHelp})`;
  return d.default === undefined || d.default === '' ? '' : ` (default ${String(d.default)})`;
}

const HELP_COLUMN = 44;

/** One --help line per advertised flag, in table order. */
export function flagHelpLines(defs: readonly FlagDef[]): string[] {
  return defs.flatMap((d) => {
    if (d.help === undefined) return [];
    const left = `  ${d.short === undefined ? '' : `-${d.short}, `}--${d.name}${d.placeholder === undefined ? '' : ` <${d.placeholder}>`}`;
    return [`${left.padEnd(HELP_COLUMN)}${d.help}${defaultSuffix(d)}`];
  });
}

/** One --help line per environment variable: the env-only settings, then those flags fall back to. */
export function envHelpLines(settings: readonly EnvDef[], defs: readonly FlagDef[]): string[] {
  const all = [...settings, ...defs.flatMap((d) => (d.env === undefined ? [] : [d.env]))];
  return all.map((e) => `  ${e.name.padEnd(HELP_COLUMN - 2)}${e.help}${defaultSuffix(e)}`);
}
