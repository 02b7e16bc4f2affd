import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUN_OPTIONS, applyConfigFile } from '../../dist/cli/options.js';
import { parseArgv } from '../../dist/base/option-table.js';
import { CHECK_OPTIONS, parseCheckArgv } from '../../dist/check/options.js';

const dir = mkdtempSync(join(tmpdir(), 'mcpguard-options-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const isGuardError = (code, message) => (error) => error.name === 'GuardError' && error.exitCode === 125 && error.code === code && message.test(error.message);

test('defaults, then options up to -- ; the command after it is untouched', () => {
  const p = parseArgv(['--grace', '2s', '--max-frame-bytes=64KiB', '--allow-batch', '--', 'python3', '--grace', '1e3', '0x1F'], RUN_OPTIONS);
  assert.equal(p.values.grace, 2000);
  assert.equal(p.values['max-frame-bytes'], 65536);
  assert.equal(p.values['allow-batch'], true);
  assert.equal(p.values['on-invalid'], 'close');
  assert.equal(p.values['call-timeout'], null);
  assert.deepEqual(p.command, ['python3', '--grace', '1e3', '0x1F']);
  assert.deepEqual([...p.given].sort(), ['allow-batch', 'grace', 'max-frame-bytes']);
});

test('options end at the first word that is not an option', () => {
  const p = parseArgv(['--grace=10', 'node', '--inspect', 'server.js'], RUN_OPTIONS);
  assert.deepEqual(p.command, ['node', '--inspect', 'server.js']);
});

for (const [argv, message] of [
  [['--grace', 'soon'], /^--grace expects milliseconds .*got 'soon'$/],
  [['--grace=-5'], /--grace expects milliseconds .*got '-5'/],
  [['--grace=1.5'], /got '1.5'/],
  [['--max-frame-bytes', '0'], /--max-frame-bytes expects a byte count .*of at least 1, got '0'/],
  [['--max-frame-bytes', '12XB'], /got '12XB'/],
  [['--on-invalid', 'ignore'], /--on-invalid expects one of close, reject, got 'ignore'/],
  [['--call-timeout', '0'], /--call-timeout expects milliseconds .*at least 1, got '0'/],
  [['--allow-batch=yes'], /--allow-batch expects true or false, got 'yes'/],
  [['--nope'], /unknown option --nope/],
  [['--grace'], /--grace expects a value/],
]) {
  test(`rejects ${argv.join(' ')} naming the option and the value`, () => {
    assert.throws(
      () => parseArgv(argv, RUN_OPTIONS),
      (error) => error.name === 'GuardError' && error.exitCode === 125 && message.test(error.message),
    );
  });
}

test('repeatable options collect their values in order; counts have bounds', () => {
  const table = {
    env: { kind: 'string', default: null, repeatable: true, help: '' },
    runs: { kind: 'count', default: 1, min: 1, max: 100, help: '' },
  };
  const p = parseArgv(['--env', 'A=1', '--env=B=2', '--runs', '3', '--', 'x'], table);
  assert.deepEqual(p.values.env, ['A=1', 'B=2']);
  assert.equal(p.values.runs, 3);
  assert.deepEqual(parseArgv(['x'], table).values.env, []);
  assert.throws(() => parseArgv(['--runs', '101'], table), /--runs expects a whole number from 1 to 100, got '101'/);
  assert.throws(() => parseArgv(['--runs', '2.5'], table), /got '2.5'/);
  assert.throws(() => parseArgv(['--bogus'], table, 'mcpguard check --help'), /unknown option --bogus \(see mcpguard check --help\)/);
});

// Names every plain object inherits: none of them is an option, on the command line or in a config file.
const INHERITED = ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf', '__defineGetter__'];

for (const [label, table] of [
  ['mcpguard', RUN_OPTIONS],
  ['mcpguard check', CHECK_OPTIONS],
]) {
  test(`${label}: inherited names are unknown options, with or without a value, and eat nothing`, () => {
    for (const name of INHERITED) {
      assert.throws(
        () => parseArgv([`--${name}`, 'python3', '-c', 'pass'], table),
        isGuardError('unknown_option', new RegExp(`^unknown option --${name} `)),
        name,
      );
      assert.throws(() => parseArgv([`--${name}=1`, '--', 'x'], table), isGuardError('unknown_option', new RegExp(`^unknown option --${name} `)), name);
    }
  });
}

test('config keys: inherited names (and an own "__proto__" from JSON.parse) are unknown keys', () => {
  for (const [name, text] of [
    ['constructor', '{"constructor": 1}'],
    ['proto', '{"__proto__": {"grace": 1}}'],
    ['toString', '{"toString": "x"}'],
    ['hasOwnProperty', '{"hasOwnProperty": true}'],
  ]) {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, text);
    const key = Object.keys(JSON.parse(text))[0];
    const parsed = parseArgv(['--', 'x'], RUN_OPTIONS);
    assert.throws(
      () => applyConfigFile(parsed, RUN_OPTIONS, file),
      (e) => e.code === 'bad_config' && e.message === `--config '${file}': unknown key "${key}"`,
      name,
    );
    assert.equal(Object.getPrototypeOf(parsed.values), Object.prototype);
    assert.equal(parsed.values.grace, 5000);
  }
});

test('durations above 2^31-1 ms are refused, naming the option, the value and the limit', () => {
  for (const [argv, shown] of [
    [['--call-timeout', '2147483648'], "'2147483648'"],
    [['--grace=2147483648'], "'2147483648'"],
    [['--drain-ms', '2147484s'], "'2147484s'"],
  ]) {
    const name = argv[0].replace(/=.*/, '');
    assert.throws(
      () => parseArgv(argv, RUN_OPTIONS),
      isGuardError(
        'bad_option',
        new RegExp(`^${name} expects at most 2147483647 ms \\(about 24\\.8 days, the longest a Node timer can wait\\), got ${shown}$`),
      ),
    );
  }
  assert.equal(parseArgv(['--grace', '2147483647', 'x'], RUN_OPTIONS).values.grace, 2147483647);
  for (const name of ['start-timeout', 'timeout', 'grace']) {
    assert.throws(() => parseArgv([`--${name}=2147483648`], CHECK_OPTIONS), new RegExp(`--${name} expects at most 2147483647 ms`));
  }
  const file = join(dir, 'timeout.json');
  writeFileSync(file, '{"call-timeout": 2147483648}');
  assert.throws(() => applyConfigFile(parseArgv(['x'], RUN_OPTIONS), RUN_OPTIONS, file), /key "call-timeout" expects at most 2147483647 ms .*got 2147483648$/);
});

test('byte counts that become a Buffer or a string are capped at what Node can hold', () => {
  assert.throws(
    () => parseArgv(['--max-frame-bytes', '1GiB'], RUN_OPTIONS),
    isGuardError('bad_option', /--max-frame-bytes expects at most \d+ bytes \(the longest string Node can hold; .*\), got '1GiB'$/),
  );
  assert.throws(() => parseArgv(['--max-frame-bytes', '1GiB'], CHECK_OPTIONS), /--max-frame-bytes expects at most \d+ bytes/);
  assert.throws(
    () => parseArgv(['--stderr-process-bytes', '5GiB'], RUN_OPTIONS),
    /--stderr-process-bytes expects at most \d+ bytes \(the most one Node Buffer can hold\), got '5GiB'$/,
  );
  assert.throws(() => parseArgv(['--stderr-excerpt-bytes', '512MiB'], RUN_OPTIONS), /--stderr-excerpt-bytes expects at most \d+ bytes/);
  // A counter only: any safe size is fine.
  assert.equal(parseArgv(['--stderr-passthrough-bytes', '1024GiB', 'x'], RUN_OPTIONS).values['stderr-passthrough-bytes'], 1024 ** 4);
  // Suffixes are looked up as own entries too.
  assert.throws(() => parseArgv(['--max-frame-bytes', '1constructor'], RUN_OPTIONS), /got '1constructor'/);
});

test('config files: a key given twice anywhere is refused, naming the file, the key and where (never last-wins)', () => {
  const cases = [
    ['dup-top.json', '{"grace": "1s",\n  "grace": "9s"}', 'duplicate key "grace" at line 2, column 3'],
    // Escapes do not hide a duplicate: the keys are compared decoded.
    ['dup-escaped.json', '{"grace": "1s", "gr\\u0061ce": "9s"}', 'duplicate key "grace" at line 1, column 17'],
    // Inside the policy object a config may hold: the deny would have become an allow.
    [
      'dup-policy.json',
      '{"policy": {"rules": [\n  {"tool": "exec", "decision": "deny", "decision": "allow"}]}}',
      'duplicate key "decision" at line 2, column 40',
    ],
  ];
  for (const [name, text, where] of cases) {
    const file = join(dir, name);
    writeFileSync(file, text);
    assert.throws(
      () => applyConfigFile(parseArgv(['x'], RUN_OPTIONS), RUN_OPTIONS, file),
      (e) => e.code === 'bad_config' && e.message === `--config '${file}': ${where}; a key may appear only once`,
      name,
    );
  }
});

test('config files: too big, empty, or a directory are refused naming the file', () => {
  const big = join(dir, 'big.json');
  writeFileSync(big, `{"grace": 1${' '.repeat(1024 * 1024)}}`);
  assert.throws(
    () => applyConfigFile(parseArgv(['x'], RUN_OPTIONS), RUN_OPTIONS, big),
    (e) => e.code === 'bad_config' && e.message === `--config '${big}' holds more than 1048576 bytes, the most a config file may hold`,
  );
  const empty = join(dir, 'empty.json');
  writeFileSync(empty, ' \n');
  assert.throws(() => applyConfigFile(parseArgv(['x'], RUN_OPTIONS), RUN_OPTIONS, empty), /--config '.*empty\.json' is empty/);
  assert.throws(() => applyConfigFile(parseArgv(['x'], RUN_OPTIONS), RUN_OPTIONS, dir), /--config cannot read '.*': EISDIR$/);
  const small = join(dir, 'small.json');
  writeFileSync(small, '{"grace": "2s"}');
  const parsed = parseArgv(['x'], RUN_OPTIONS);
  applyConfigFile(parsed, RUN_OPTIONS, small);
  assert.equal(parsed.values.grace, 2000);
});

test('check --env __proto__=x sets a variable of that name, not the prototype', () => {
  const plan = parseCheckArgv(['--env', '__proto__=x', '--env', 'constructor=y', '--', 'server']);
  assert.equal(Object.getPrototypeOf(plan.env), Object.prototype);
  assert.ok(Object.hasOwn(plan.env, '__proto__'));
  assert.equal(Object.getOwnPropertyDescriptor(plan.env, '__proto__').value, 'x');
  assert.equal(plan.env.constructor, 'y');
});
