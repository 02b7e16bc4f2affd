// The option-table machinery on its own (base/option-table.ts), with a table
// of its own: the relay's and check's tables are tested in test/cli.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultsOf, parseArgv, parseOptionValue } from '../../dist/base/option-table.js';

const TABLE = {
  wait: { kind: 'ms', default: null, min: 1, help: '' },
  keep: { kind: 'retain', default: null, check: (text) => (text === 'good' ? null : 'expects good'), help: '' },
  tag: { kind: 'string', default: null, repeatable: true, help: '' },
};

test('defaults: null for off, [] for repeatable options', () => {
  assert.deepEqual(defaultsOf(TABLE), { wait: null, keep: null, tag: [] });
});

test('a retain value goes through the check the table gives it; its wording names the option and the value', () => {
  assert.equal(parseOptionValue('keep', TABLE.keep, 'good'), 'good');
  assert.throws(() => parseOptionValue('keep', TABLE.keep, 'bad'), { name: 'GuardError', message: "--keep expects good, got 'bad'" });
  assert.throws(() => parseOptionValue('keep', TABLE.keep, 7, '--config \'c.json\' key "keep"'), {
    message: '--config \'c.json\' key "keep" expects a string such as "30d,1G", got 7',
  });
});

test('parseArgv: an inherited name is no option; an optional duration takes off', () => {
  assert.throws(() => parseArgv(['--toString', 'x'], TABLE, 'tool --help'), { message: 'unknown option --toString (see tool --help)' });
  const parsed = parseArgv(['--wait', 'off', '--tag', 'a', '--tag=b', 'cmd'], TABLE);
  assert.deepEqual(parsed.values, { wait: null, keep: null, tag: ['a', 'b'] });
  assert.deepEqual(parsed.command, ['cmd']);
});
