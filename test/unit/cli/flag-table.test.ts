import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { envHelpLines, flagHelpLines, parseFlags, type FlagDef } from '../../../src/cli/flag-table.js';

const TABLE = [
  { name: 'file', type: 'string', placeholder: 'path', default: 'a.yaml', help: 'The file' },
  { name: 'period', type: 'string', placeholder: 'duration', default: '1m', defaultHelp: 'a minute', example: '30s', help: 'How often' },
  { name: 'verbose', type: 'boolean', default: false, aliases: [{ name: 'chatty', why: '--chatty is the old spelling' }], help: 'Say more' },
  { name: 'id', type: 'string', default: '', env: { name: 'OLD_ID', help: 'Deprecated: the id' }, help: 'The id' },
  { name: 'color', type: 'string', choices: ['red', 'blue'], ignored: true },
  { name: 'quiet', type: 'boolean', ignored: true },
  { name: 'help', type: 'boolean', short: 'h', help: 'Show this help' },
] as const satisfies readonly FlagDef[];

function parse(argv: string[], env: Record<string, string | undefined> = {}) {
  const r = parseFlags(TABLE, argv, env, 'tool');
  assert.ok(!r.help);
  return r;
}

describe('parseFlags', () => {
  it('gives the default when a flag is not given, the environment before the default', () => {
    const { values, problems } = parse([]);
    assert.deepEqual(problems, []);
    assert.equal(values.defaulted('file'), 'a.yaml');
    assert.equal(values.boolean('verbose'), false);
    assert.equal(values.string('color'), undefined);
    assert.equal(values.has('file'), false);
    assert.equal(parse([], { OLD_ID: 'from-env' }).values.defaulted('id'), 'from-env');
    assert.equal(parse(['--id=flag'], { OLD_ID: 'from-env' }).values.defaulted('id'), 'flag');
  });

  it("names a value's source in messages: the spelling given, the variable, or the flag", () => {
    assert.equal(parse(['--chatty']).values.label('verbose'), '--chatty');
    assert.equal(parse(['--verbose']).values.label('verbose'), '--verbose');
    assert.equal(parse([], { OLD_ID: 'x' }).values.label('id'), 'OLD_ID');
    assert.equal(parse([]).values.label('id'), '--id');
  });

  it('takes an alias for its flag, but not both', () => {
    assert.equal(parse(['--chatty']).values.boolean('verbose'), true);
    assert.deepEqual(parse(['--chatty', '--verbose=false']).problems, ['only one of --verbose and --chatty may be set (--chatty is the old spelling)']);
    assert.equal(parse(['--chatty', '--chatty=false']).values.boolean('verbose'), false, 'the last repeat wins');
  });

  it('uses the example, else the default, in hints', () => {
    assert.deepEqual(parse(['--period']).problems, ['--period needs a value, e.g. --period=30s']);
    assert.deepEqual(parse(['--file']).problems, ['--file needs a value, e.g. --file=a.yaml']);
    assert.deepEqual(parse(['--id']).problems, ['--id needs a value, e.g. --id=<value>']);
    assert.deepEqual(parse(['--file', '-h']).problems, ['--file is followed by the flag -h instead of a value; write --file=<path>']);
  });

  it('checks choices on request and lists the ignored flags given, in table order', () => {
    const { values } = parse(['--quiet', '--color=green']);
    const problems: string[] = [];
    assert.equal(values.choice('color', problems), 'green');
    assert.deepEqual(problems, ['--color is "green"; expected one of red, blue']);
    assert.deepEqual(values.ignored(), ['--color', '--quiet']);
  });

  it('suggests the nearest flag, and names the command otherwise', () => {
    assert.deepEqual(parse(['stray', '--fil=x', '--zzz', 'its-value']).problems, [
      'unexpected argument "stray"; tool takes only flags (see --help)',
      'unknown flag --fil; did you mean --file?',
      'unknown flag --zzz; see tool --help',
    ]);
  });

  it('stops at --help or its short form', () => {
    assert.deepEqual(parseFlags(TABLE, ['--bogus', '-h'], {}, 'tool'), { help: true });
  });

  it('refuses to read a default the table does not have', () => {
    assert.throws(() => parse([]).values.defaulted('color'), /no string default/);
  });
});

describe('help lines', () => {
  it('show each advertised flag with its placeholder and default, and the environment', () => {
    assert.deepEqual(flagHelpLines(TABLE), [
      `${'  --file <path>'.padEnd(44)}The file (default a.yaml)`,
      `${'  --period <duration>'.padEnd(44)}How often (default: a minute)`,
      `${'  --verbose'.padEnd(44)}Say more (default false)`,
      `${'  --id'.padEnd(44)}The id`,
      `${'  -h, --help'.padEnd(44)}Show this help`,
    ]);
    assert.deepEqual(envHelpLines([{ name: 'BIN', help: 'The binary', default: 'x', defaultHelp: 'x, on PATH' }], TABLE), [
      `${'  BIN'.padEnd(44)}The binary (default: x, on PATH)`,
      `${'  OLD_ID'.padEnd(44)}Deprecated: the id`,
    ]);
  });
});
