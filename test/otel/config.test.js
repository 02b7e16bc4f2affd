// The export's configuration from OTEL_* variables and the command line, by the
// OTLP exporter spec; every bad value is refused naming the variable.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { otlpConfig } from '../../dist/otel/config.js';

const BASE = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

function refused(env, pattern, cli = {}) {
  assert.throws(
    () => otlpConfig(env, cli),
    (error) => {
      assert.equal(error.name, 'GuardError');
      assert.equal(error.code, 'otlp-config');
      assert.match(error.message, pattern);
      return true;
    },
  );
}

test('config: off with no endpoint, with --otlp off, with OTEL_SDK_DISABLED=true (any case); an empty variable is unset', () => {
  assert.equal(otlpConfig({}, {}), null);
  assert.equal(otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, {}), null);
  assert.equal(otlpConfig(BASE, { off: true }), null);
  assert.equal(otlpConfig({ ...BASE, OTEL_SDK_DISABLED: 'TRUE' }, {}), null);
  assert.equal(otlpConfig(BASE, { endpoint: 'http://x:4318', off: true }), null);
  assert.notEqual(otlpConfig({ ...BASE, OTEL_SDK_DISABLED: 'false' }, {}), null);
  assert.notEqual(otlpConfig({ ...BASE, OTEL_SDK_DISABLED: '' }, {}), null);
});

test('config: the base endpoint gets v1/traces, v1/logs, v1/metrics appended; defaults are the spec’s', () => {
  const c = otlpConfig(BASE, {});
  assert.deepEqual(c.traces, { url: 'http://collector:4318/v1/traces', headers: {}, protocol: 'http/protobuf', compression: 'none', timeoutMs: 10000 });
  assert.equal(c.logs.url, 'http://collector:4318/v1/logs');
  assert.equal(c.metrics.url, 'http://collector:4318/v1/metrics');
  assert.equal(otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://h/mycollector/' }, {}).traces.url, 'https://h/mycollector/v1/traces');
  assert.equal(otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://h/mycollector' }, {}).logs.url, 'https://h/mycollector/v1/logs');
  assert.deepEqual(c.sampler, { kind: 'parentbased_always_on', ratio: 1 });
  assert.deepEqual(c.resource, [
    ['service.name', 'mcpguard'],
    ['telemetry.sdk.name', 'mcpguard'],
    ['telemetry.sdk.language', 'nodejs'],
  ]);
});

test('config: a per-signal endpoint is used as is (root path added when it has none); the others stay off without a base', () => {
  const c = otlpConfig(
    { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://m.example.com/v1/metrics/' },
    {},
  );
  assert.equal(c.traces.url, 'http://collector:4318/');
  assert.equal(c.metrics.url, 'https://m.example.com/v1/metrics/');
  assert.equal(c.logs, null);
  const both = otlpConfig({ ...BASE, OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'http://logs:9/ingest' }, {});
  assert.equal(both.logs.url, 'http://logs:9/ingest');
  assert.equal(both.traces.url, 'http://collector:4318/v1/traces');
});

test('config: --otlp-endpoint is a base URL that wins over every endpoint variable', () => {
  const c = otlpConfig({ ...BASE, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://other/' }, { endpoint: 'http://cli:4318' });
  assert.equal(c.traces.url, 'http://cli:4318/v1/traces');
  assert.equal(c.metrics.url, 'http://cli:4318/v1/metrics');
  refused({}, /^--otlp-endpoint="nope": not a URL/, { endpoint: 'nope' });
});

test('config: headers are percent-decoded k=v pairs; a signal’s own replaces the general ones', () => {
  const c = otlpConfig(
    {
      ...BASE,
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc%3D%3D , x-team=a%2Cb,,',
      OTEL_EXPORTER_OTLP_LOGS_HEADERS: 'x-logs=1',
    },
    {},
  );
  assert.deepEqual(c.traces.headers, { authorization: 'Bearer abc==', 'x-team': 'a,b' });
  assert.deepEqual(c.logs.headers, { 'x-logs': '1' });
});

test('config: protocol, compression and timeout, general and per signal', () => {
  const c = otlpConfig(
    {
      ...BASE,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'none',
      OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'gzip',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
      OTEL_EXPORTER_OTLP_LOGS_TIMEOUT: '300',
    },
    {},
  );
  assert.deepEqual(
    [c.traces, c.logs, c.metrics].map((t) => [t.protocol, t.compression, t.timeoutMs]),
    [
      ['http/json', 'gzip', 2500],
      ['http/json', 'none', 300],
      ['http/protobuf', 'none', 2500],
    ],
  );
});

test('config: service name and resource attributes (percent-decoded; OTEL_SERVICE_NAME wins over service.name)', () => {
  const c = otlpConfig(
    { ...BASE, OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs,deployment.environment=prod%2Ceu,team=a%3Db', OTEL_SERVICE_NAME: 'agents' },
    {},
  );
  assert.deepEqual(new Map(c.resource).get('service.name'), 'agents');
  assert.equal(new Map(c.resource).get('deployment.environment'), 'prod,eu');
  assert.equal(new Map(c.resource).get('team'), 'a=b');
  const attrsOnly = otlpConfig({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs' }, {});
  assert.equal(new Map(attrsOnly.resource).get('service.name'), 'from-attrs');
});

test('config: samplers and their ratio', () => {
  for (const kind of ['always_on', 'always_off', 'parentbased_always_on', 'parentbased_always_off'])
    assert.deepEqual(otlpConfig({ ...BASE, OTEL_TRACES_SAMPLER: kind, OTEL_TRACES_SAMPLER_ARG: 'ignored' }, {}).sampler, { kind, ratio: 1 });
  assert.deepEqual(otlpConfig({ ...BASE, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }, {}).sampler, {
    kind: 'traceidratio',
    ratio: 0.25,
  });
  assert.deepEqual(otlpConfig({ ...BASE, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' }, {}).sampler, { kind: 'parentbased_traceidratio', ratio: 1 });
  assert.equal(otlpConfig({ ...BASE, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, {}).sampler.ratio, 0);
});

test('config: every bad value is refused, naming the variable and the value', () => {
  refused({ ...BASE, OTEL_SDK_DISABLED: 'yes' }, /^OTEL_SDK_DISABLED="yes": must be true or false/);
  refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /^OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318": scheme collector: is not supported/);
  refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, /^OTEL_EXPORTER_OTLP_ENDPOINT="not a url": not a URL/);
  refused({ OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'ftp://h/x' }, /^OTEL_EXPORTER_OTLP_LOGS_ENDPOINT="ftp:\/\/h\/x": scheme ftp:/);
  refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://user:tok3n@h:4317' }, /^OTEL_EXPORTER_OTLP_ENDPOINT="grpc:\/\/…@h:4317": scheme grpc:/);
  refused({ ...BASE, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /^OTEL_EXPORTER_OTLP_PROTOCOL="grpc": OTLP\/gRPC is not supported: use http\/protobuf/);
  refused({ ...BASE, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/xml' }, /^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http\/xml": must be http\/protobuf or http\/json/);
  refused({ ...BASE, OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd' }, /^OTEL_EXPORTER_OTLP_COMPRESSION="zstd": must be gzip or none/);
  refused({ ...BASE, OTEL_EXPORTER_OTLP_METRICS_COMPRESSION: 'br' }, /^OTEL_EXPORTER_OTLP_METRICS_COMPRESSION="br"/);
  for (const bad of ['10s', '0', '-1', '1.5', '600001'])
    refused({ ...BASE, OTEL_EXPORTER_OTLP_TIMEOUT: bad }, new RegExp(`^OTEL_EXPORTER_OTLP_TIMEOUT="${bad}": must be whole milliseconds`));
  refused({ ...BASE, OTEL_EXPORTER_OTLP_LOGS_TIMEOUT: 'x' }, /^OTEL_EXPORTER_OTLP_LOGS_TIMEOUT="x"/);
  refused({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: 'a=1,oops' }, /^OTEL_RESOURCE_ATTRIBUTES: item 2 "oops" is not key=value/);
  refused({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: 'a=%E0%A4%A' }, /^OTEL_RESOURCE_ATTRIBUTES: the value of "a" "a=%E0%A4%A" is not valid percent-encoding/);
  refused({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: '=v' }, /^OTEL_RESOURCE_ATTRIBUTES: item 1 .*not key=value/);
  refused(
    { ...BASE, OTEL_TRACES_SAMPLER: 'jaeger_remote' },
    /^OTEL_TRACES_SAMPLER="jaeger_remote": must be one of always_on, .* \(remote samplers are not supported\)/,
  );
  for (const bad of ['1.5', '-0.1', 'half', '1e-1'])
    refused(
      { ...BASE, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: bad },
      /^OTEL_TRACES_SAMPLER_ARG=".*": the ratio for traceidratio must be a number from 0 to 1/,
    );
});

test('config: a bad header never shows its value (they carry API keys)', () => {
  const secret = 'sk-live-0123456789abcdef';
  const cases = [
    [
      { ...BASE, OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${secret},${secret}` },
      /^OTEL_EXPORTER_OTLP_HEADERS: item 2 has no key=value \(values are not shown\)$/,
    ],
    [
      { ...BASE, OTEL_EXPORTER_OTLP_HEADERS: `x-key=${secret}%0D%0Ainjected: 1` },
      /^OTEL_EXPORTER_OTLP_HEADERS: the value of header "x-key" holds a control character \(values are not shown\)$/,
    ],
    [
      { ...BASE, OTEL_EXPORTER_OTLP_TRACES_HEADERS: `x-key=${secret}%ZZ` },
      /^OTEL_EXPORTER_OTLP_TRACES_HEADERS: the value of "x-key" is not valid percent-encoding$/,
    ],
    [{ ...BASE, OTEL_EXPORTER_OTLP_LOGS_HEADERS: `bad key=${secret}` }, /^OTEL_EXPORTER_OTLP_LOGS_HEADERS: header 1 has a bad name "bad key"$/],
    [{ ...BASE, OTEL_EXPORTER_OTLP_HEADERS: `Content-Encoding=${secret}` }, /^OTEL_EXPORTER_OTLP_HEADERS: header "Content-Encoding" is set by mcpguard itself/],
  ];
  for (const [env, pattern] of cases) {
    refused(env, pattern);
    assert.throws(
      () => otlpConfig(env, {}),
      (error) => !error.message.includes(secret),
    );
  }
});
