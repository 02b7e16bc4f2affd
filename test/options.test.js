import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RUN_OPTIONS, parseArgv } from '../dist/options.js';

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
    assert.throws(() => parseArgv(argv, RUN_OPTIONS), (error) => error.name === 'GuardError' && error.exitCode === 125 && message.test(error.message));
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
