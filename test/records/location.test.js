import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureRecordDir, ensureWritableRecordDir, recordDirFor, resolveRecordDir, sharedSubdirName } from '../../dist/records/location.js';

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

test('ensureRecordDir creates missing parents and the directory 0700, and refuses a file in the way', () => {
  const previous = process.umask(0o022);
  try {
    const dir = join(root, 'a', 'b', 'c');
    assert.equal(ensureRecordDir(dir), dir);
    for (const made of [join(root, 'a'), join(root, 'a', 'b'), dir]) assert.equal(statSync(made).mode & 0o7777, 0o700, made);
    assert.equal(ensureRecordDir(dir), dir); // idempotent
    const file = join(root, 'plain-file');
    writeFileSync(file, '');
    assert.throws(
      () => ensureRecordDir(file),
      (e) => e.code === 'ERR_RECORD_DIR' && e.message.includes(file),
    );
  } finally {
    process.umask(previous);
  }
});

test('an existing directory keeps its mode: 0755 is used as it is, 0775 and 0757 are refused, never chmodded', () => {
  const open = join(root, 'open');
  mkdirSync(open);
  chmodSync(open, 0o755);
  assert.equal(ensureRecordDir(open), open);
  assert.equal(statSync(open).mode & 0o7777, 0o755);
  for (const [name, mode, problem] of [
    ['group', 0o775, /group-writable \(mode 0775\)/],
    ['world', 0o757, /world-writable \(mode 0757\)/],
  ]) {
    const dir = join(root, name);
    mkdirSync(dir);
    chmodSync(dir, mode);
    assert.throws(
      () => ensureRecordDir(dir),
      (e) => e.code === 'ERR_RECORD_DIR' && e.message.includes(dir) && problem.test(e.message) && /chmod go-w/.test(e.message),
    );
    assert.equal(statSync(dir).mode & 0o7777, mode);
    assert.equal(recordDirFor(dir), dir, 'readers still find it');
  }
});

test('a shared sticky directory gets an own 0700 subdirectory, which readers find too', () => {
  const shared = join(root, 'sticky');
  mkdirSync(shared);
  chmodSync(shared, 0o1777);
  const own = join(shared, sharedSubdirName());
  assert.equal(recordDirFor(shared), own, 'readers look there before it exists');
  assert.equal(ensureRecordDir(shared), own);
  assert.equal(statSync(shared).mode & 0o7777, 0o1777);
  assert.equal(statSync(own).mode & 0o7777, 0o700);
  assert.equal(ensureRecordDir(shared), own);
  assert.equal(recordDirFor(shared), own);
  // An existing subdirectory that is not private is refused by writer and readers alike, and left as it is.
  chmodSync(own, 0o750);
  for (const locate of [ensureRecordDir, recordDirFor]) {
    assert.throws(
      () => locate(shared),
      (e) => e.code === 'ERR_RECORD_DIR' && e.message.includes(own) && /mode 0750/.test(e.message),
    );
  }
  assert.equal(statSync(own).mode & 0o7777, 0o750);
});

// Node's mkdirSync({ recursive: true }) loops for ever on these (ENOENT for the child, EEXIST for the parent, again).
test('a directory whose parent exists but cannot hold it is an error at once, not an endless mkdir', { timeout: 10000 }, () => {
  const cases = [['/proc/nope', /its parent '\/proc' exists but cannot hold a directory \('\/proc' is on procfs/]];
  const dangling = join(root, 'dangling');
  symlinkSync(join(root, 'nowhere'), dangling);
  cases.push([join(dangling, 'records'), /its parent '.*dangling' is a symbolic link to '.*nowhere', which does not exist/]);
  for (const [dir, problem] of cases) {
    assert.throws(
      () => ensureRecordDir(dir),
      (e) => e.code === 'ERR_RECORD_DIR' && e.message.includes(`'${dir}'`) && problem.test(e.message),
      dir,
    );
  }
  assert.equal(existsSync(join(root, 'nowhere')), false, 'nothing made through the symlink');
});

test('ensureWritableRecordDir proves a file can be made and leaves nothing behind; /proc cannot hold one', () => {
  const dir = join(root, 'writable');
  assert.equal(ensureWritableRecordDir(dir), dir);
  assert.deepEqual(readdirSync(dir), []);
  assert.throws(
    () => ensureWritableRecordDir('/proc'),
    (e) => e.code === 'ERR_RECORD_DIR' && /record directory '\/proc' cannot hold mcpguard's files: .*ENOENT/.test(e.message) && !e.message.includes('probe'),
  );
});
