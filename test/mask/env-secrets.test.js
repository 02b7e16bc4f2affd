// Which environment values count as secrets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { envSecrets, isSecretEnvName, ENV_COMMIT_BYTES } from '../../dist/mask/env-secrets.js';

test('secret-looking env names', () => {
  for (const name of [
    'GITHUB_TOKEN',
    'api_key',
    'AWS_SECRET_ACCESS_KEY',
    'DB_PASSWORD',
    'PGPASSWD',
    'MYSQL_PASS',
    'OPENAI_API_KEY',
    'SESSION_COOKIE',
    'PRIVATE_PEM',
    'SENTRY_DSN',
    'Auth_Header',
    'GOOGLE_APPLICATION_CREDENTIALS',
  ]) {
    assert.equal(isSecretEnvName(name), true, name);
  }
  for (const name of [
    'PATH',
    'HOME',
    'LANG',
    'PWD',
    'XDG_SESSION_TYPE',
    'DBUS_SESSION_BUS_ADDRESS',
    'SSH_AUTH_SOCK',
    'GIT_AUTHOR_NAME',
    'DESKTOP_SESSION',
    'BYPASS_CACHE',
    'MCPGUARD_SESSION_ID',
  ]) {
    assert.equal(isSecretEnvName(name), false, name);
  }
});

test('secrets: distinct values of secret names, at least 6 bytes, longest first', () => {
  const list = envSecrets({
    A_TOKEN: 'short',
    B_TOKEN: 'abcdef',
    C_SECRET: 'abcdefgh',
    D_SECRET: 'abcdefgh',
    HOME: '/home/someone',
    E_PASSWORD: 'pässwört',
    F_KEY: undefined,
    G_KEY: 'k'.repeat(100),
  });
  assert.deepEqual(
    list.map((s) => s.replacement.toString()),
    ['[REDACTED:G_KEY]', '[REDACTED:E_PASSWORD]', '[REDACTED:C_SECRET]', '[REDACTED:B_TOKEN]'],
  );
  assert.deepEqual(list[1].value, Buffer.from('pässwört'));
  assert.equal(list[0].commit, ENV_COMMIT_BYTES);
  assert.equal(list[3].commit, 6);
});
