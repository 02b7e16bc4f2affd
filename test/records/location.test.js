import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureRecordDir, resolveRecordDir } from '../../dist/records/location.js';

const root = mkdtempSync(join(tmpdir(), 'mcpguard-location-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('record dir precedence: --record-dir, $MCPGUARD_HOME, $XDG_STATE_HOME/mcpguard, ~/.local/state/mcpguard', () => {
  const env = { MCPGUARD_HOME: '/m/home', XDG_STATE_HOME: '/x/state', HOME: '/h' };
  assert.equal(resolveRecordDir('/explicit', env), '/explicit');
  assert.equal(resolveRecordDir('rel/dir', env), resolve('rel/dir'));
  assert.equal(resolveRecordDir(undefined, env), '/m/home');
  assert.equal(resolveRecordDir(undefined, { ...env, MCPGUARD_HOME: '' }), '/x/state/mcpguard');
  assert.equal(resolveRecordDir(undefined, { XDG_STATE_HOME: '/x/state', HOME: '/h' }), '/x/state/mcpguard');
  // The XDG spec says a relative XDG_STATE_HOME is invalid and must be ignored.
  assert.equal(resolveRecordDir(undefined, { XDG_STATE_HOME: 'relative', HOME: '/h' }), '/h/.local/state/mcpguard');
  assert.equal(resolveRecordDir(undefined, { HOME: '/h' }), '/h/.local/state/mcpguard');
  assert.equal(resolveRecordDir(undefined, {}), join(homedir(), '.local', 'state', 'mcpguard'));
});

test('ensureRecordDir creates parents, sets 0700 and refuses a file in the way', () => {
  const previous = process.umask(0o022);
  try {
    const dir = join(root, 'a', 'b', 'c');
    ensureRecordDir(dir);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    ensureRecordDir(dir); // idempotent
    const file = join(root, 'plain-file');
    writeFileSync(file, '');
    assert.throws(() => ensureRecordDir(file), (e) => e.code === 'ERR_RECORD_DIR' && e.message.includes(file));
  } finally {
    process.umask(previous);
  }
});
