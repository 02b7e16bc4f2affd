// OTLP over https: the collector's CA from OTEL_EXPORTER_OTLP_CERTIFICATE and a
// client certificate for mTLS (CLIENT_CERTIFICATE, CLIENT_KEY), against a real
// https receiver with the test-only material in test/fixtures/otlp-tls.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { otlpConfig } from '../../dist/otel/config.js';
import { createExporter } from '../../dist/otel/exporter.js';
import { startReceiver } from '../helpers/otlp-receiver.js';

const DIR = new URL('../fixtures/otlp-tls/', import.meta.url).pathname;
const pem = (name) => readFileSync(`${DIR}${name}`);
const SERVER = { key: pem('server-key.pem'), cert: pem('server.pem') };
const MTLS = { ...SERVER, ca: pem('ca.pem'), requestCert: true, rejectUnauthorized: true };
const SPAN = {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  name: 'x',
  kind: 2,
  startNs: 1n,
  endNs: 2n,
  attributes: [],
  events: [],
  status: { code: 0 },
};

async function send(url, env) {
  const config = otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: url, ...env }, {});
  const ex = createExporter(config, { name: 'mcpguard', version: '0' }, { maxAttempts: 1 });
  ex.span(SPAN);
  return ex.shutdown(5000);
}

test('tls: the collector is trusted through OTEL_EXPORTER_OTLP_CERTIFICATE, and not without it', async (t) => {
  const rx = await startReceiver([], SERVER);
  t.after(() => rx.close());
  assert.equal((await send(rx.url, { OTEL_EXPORTER_OTLP_CERTIFICATE: `${DIR}ca.pem` })).sent.spans, 1);
  assert.equal((await send(rx.url, {})).failed.spans, 1, 'an unknown CA is refused');
  assert.equal(rx.requests.length, 1);
});

test('tls: mTLS with OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY (per signal too)', async (t) => {
  const rx = await startReceiver([], MTLS);
  t.after(() => rx.close());
  const ca = { OTEL_EXPORTER_OTLP_CERTIFICATE: `${DIR}ca.pem` };
  const client = { OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE: `${DIR}client.pem`, OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: `${DIR}client-key.pem` };
  assert.equal((await send(rx.url, { ...ca, ...client })).sent.spans, 1);
  assert.equal((await send(rx.url, ca)).failed.spans, 1, 'no client certificate, no export');
  assert.equal(rx.requests.length, 1);
});

test('tls: a certificate variable that names no file, a non-PEM file or half of a client pair is refused up front; a key never shown', () => {
  const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector:4318' };
  const refused = (env, pattern) =>
    assert.throws(
      () => otlpConfig({ ...base, ...env }, {}),
      (error) => error.code === 'otlp-config' && pattern.test(error.message),
    );
  refused({ OTEL_EXPORTER_OTLP_CERTIFICATE: '/nonexistent/ca.pem' }, /^OTEL_EXPORTER_OTLP_CERTIFICATE="\/nonexistent\/ca.pem": cannot be read \(ENOENT\)/);
  refused({ OTEL_EXPORTER_OTLP_CERTIFICATE: DIR }, /^OTEL_EXPORTER_OTLP_CERTIFICATE=".*": cannot be read \(EISDIR\)/);
  refused({ OTEL_EXPORTER_OTLP_CERTIFICATE: `${DIR}README.md` }, /is not PEM \(no -----BEGIN line\)/);
  refused({ OTEL_EXPORTER_OTLP_CLIENT_KEY: `${DIR}client-key.pem` }, /^OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE .*is not set: mTLS needs both/);
  refused(
    { OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE: `${DIR}client.pem` },
    /OTEL_EXPORTER_OTLP_CLIENT_KEY \(or OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY\) is not set/,
  );
  const key = pem('client-key.pem').toString();
  assert.throws(
    () => otlpConfig({ ...base, OTEL_EXPORTER_OTLP_CLIENT_KEY: `${DIR}client-key.pem` }, {}),
    (error) => !error.message.includes(key.split('\n')[1]),
  );
  const http = otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_CERTIFICATE: `${DIR}ca.pem` }, {});
  assert.equal(http.traces.tls, undefined, 'on http: the certificate is checked, then unused');
});
