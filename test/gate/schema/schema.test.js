// The schema gate's engine (src/gate/*): the real JSON Schema library behind
// mcpguard's own checks, on the real tools of @modelcontextprotocol/server-everything
// (listed live with the SDK v1 Client) and on hand-written schemas for every
// dialect, bound and refusal. The relay does not call it yet, so these tests
// drive the module itself (dist/, built by `npm test`); the lazy load is
// observed in a child process of its own.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT } from '../../helpers/run.js';
import { compileWhen, loadEngine, ToolSchemas, verdictText } from '../../../dist/gate/schema/schema.js';
import { MAX_EXPANDED_SUBSCHEMAS, MAX_SCHEMA_DEPTH } from '../../../dist/gate/schema/limits.js';
import { compileSchema, resolveDialect } from '../../../dist/gate/schema/engine.js';
import { json, schema as randomSchema } from './json-arbitraries.js';

const TIMEOUT = 60000;
const EVERYTHING = join(ROOT, 'node_modules', '.bin', 'mcp-server-everything');
const D7 = 'http://json-schema.org/draft-07/schema#';
const D2019 = 'https://json-schema.org/draft/2019-09/schema';
const D2020 = 'https://json-schema.org/draft/2020-12/schema';

/** A ToolSchemas that knows one tool per entry of `schemas` (name → inputSchema). */
function toolsOf(schemas, protocolVersion = '2025-11-25') {
  const tools = new ToolSchemas({ protocolVersion });
  tools.learnPage(
    Object.entries(schemas).map(([name, inputSchema]) => ({ name, inputSchema })),
    true,
  );
  return tools;
}

async function unusableReason(schema, protocolVersion) {
  const v = await toolsOf({ t: schema }, protocolVersion).checkArguments('t', {});
  assert.equal(v.kind, 'unusable', JSON.stringify(v));
  return v.reason;
}

describe('the tools of @modelcontextprotocol/server-everything, listed live', { timeout: TIMEOUT }, () => {
  let client;
  let listed;
  const tools = new ToolSchemas();

  before(async () => {
    const transport = new StdioClientTransport({ command: EVERYTHING, args: ['stdio'], stderr: 'pipe', cwd: ROOT });
    transport.stderr.resume();
    client = new Client({ name: 'mcpguard-gate-test', version: '1.0.0' });
    await client.connect(transport);
    listed = (await client.listTools()).tools;
    // Every schema of server-everything names its dialect ($schema draft-07): the protocol default does not apply.
    tools.learnPage(listed, true, '2025-11-25');
  });

  after(async () => {
    const pid = client?.transport?.pid;
    await client?.close().catch(() => {});
    if (pid)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
  });

  test('every listed tool compiles, and {} or its required members pass', async () => {
    assert.ok(listed.length >= 10, `listed ${listed.length} tools`);
    const samples = {
      echo: { message: 'hi' },
      'get-sum': { a: 1, b: 2 },
      'get-annotated-message': { messageType: 'success' },
      'get-structured-content': { location: 'Chicago' },
      'simulate-research-query': { topic: 'x' },
    };
    for (const t of listed) {
      assert.ok(tools.known(t.name));
      assert.deepEqual(tools.tool(t.name).annotations, t.annotations);
      const args = samples[t.name] ?? {};
      assert.deepEqual(await tools.checkArguments(t.name, args), { ok: true }, `${t.name} ${JSON.stringify(args)}`);
    }
  });

  test('wrong arguments are refused with the failing path and keyword, as the server itself refuses them', async () => {
    const cases = [
      ['echo', { message: 42 }, '/message', 'type'],
      ['echo', {}, '/message', 'required'],
      ['get-sum', { a: 1 }, '/b', 'required'],
      ['get-sum', { a: 1, b: 'two' }, '/b', 'type'],
      ['get-annotated-message', { messageType: 'shout' }, '/messageType', 'enum'],
      ['get-resource-links', { count: 11 }, '/count', 'maximum'],
      ['get-structured-content', { location: 'Paris' }, '/location', 'enum'],
    ];
    for (const [name, args, path, keyword] of cases) {
      const v = await tools.checkArguments(name, args);
      assert.equal(v.kind, 'invalid', `${name} ${JSON.stringify(args)}`);
      assert.deepEqual([v.errors[0].path, v.errors[0].keyword], [path, keyword], JSON.stringify(v.errors));
      // The oracle: the server's own validation refuses the same call.
      const answer = await client.callTool({ name, arguments: args }).then(
        (r) => r.isError === true,
        () => true,
      );
      assert.equal(answer, true, `the server accepted ${name} ${JSON.stringify(args)}`);
    }
  });

  test('structuredContent is checked against the outputSchema', async () => {
    const result = await client.callTool({ name: 'get-structured-content', arguments: { location: 'Chicago' } });
    assert.deepEqual(await tools.checkOutput('get-structured-content', result.structuredContent), { ok: true });
    const bad = await tools.checkOutput('get-structured-content', { ...result.structuredContent, temperature: 'warm', extra: 1 });
    assert.equal(bad.kind, 'invalid');
    assert.deepEqual(bad.errors.map((e) => `${e.path} ${e.keyword}`).sort(), ['/extra additionalProperties', '/temperature type']);
    const missing = await tools.checkOutput('get-structured-content', undefined);
    assert.deepEqual(
      missing.errors.map((e) => e.keyword),
      ['structuredContent'],
    );
    assert.deepEqual(await tools.checkOutput('echo', { anything: true }), { ok: true }, 'no outputSchema, nothing to check');
  });
});

describe('dialects', () => {
  // In draft-07 the members beside a $ref are ignored; from 2019-09 on they apply.
  const siblings = { type: 'object', properties: { a: { $ref: '#/$defs/s', maxLength: 2 } }, $defs: { s: { type: 'string' } } };
  const long = { a: 'abc' };

  test('no $schema: draft-07 before protocol 2025-11-25, 2020-12 from it on', async () => {
    assert.deepEqual(await toolsOf({ t: siblings }, '2025-06-18').checkArguments('t', long), { ok: true });
    assert.equal((await toolsOf({ t: siblings }, '2025-11-25').checkArguments('t', long)).kind, 'invalid');
    assert.equal((await toolsOf({ t: siblings }, '2026-07-28').checkArguments('t', long)).kind, 'invalid');
  });

  test('$schema wins over the protocol default, in either scheme and with or without #', async () => {
    for (const uri of [D7, 'http://json-schema.org/draft-07/schema', 'https://json-schema.org/draft-07/schema#']) {
      assert.deepEqual(await toolsOf({ t: { $schema: uri, ...siblings } }, '2025-11-25').checkArguments('t', long), { ok: true }, uri);
    }
    for (const uri of [D2020, 'http://json-schema.org/draft/2020-12/schema', D2019]) {
      assert.equal((await toolsOf({ t: { $schema: uri, ...siblings } }, '2025-06-18').checkArguments('t', long)).kind, 'invalid', uri);
    }
  });

  test('each dialect checks its own keywords: tuple items (07), $recursiveRef (2019-09), prefixItems (2020-12)', async () => {
    const tuple = await toolsOf({ t: { $schema: D7, type: 'array', items: [{ type: 'string' }], additionalItems: false } });
    assert.deepEqual(await tuple.checkArguments('t', ['a']), { ok: true });
    assert.deepEqual((await tuple.checkArguments('t', ['a', 1])).errors[0], { path: '/1', keyword: 'additionalItems', message: 'is not allowed' });
    const tree = toolsOf({
      t: { $schema: D2019, $recursiveAnchor: true, type: 'object', properties: { kids: { type: 'array', items: { $recursiveRef: '#' } } } },
    });
    assert.deepEqual(await tree.checkArguments('t', { kids: [{ kids: [] }] }), { ok: true });
    assert.equal((await tree.checkArguments('t', { kids: [{ kids: [3] }] })).errors[0].path, '/kids/0/kids/0');
    const prefix = toolsOf({ t: { type: 'array', prefixItems: [{ type: 'string' }], items: false } });
    assert.equal((await prefix.checkArguments('t', ['a', 'b'])).errors[0].keyword, 'items');
    assert.match(await unusableReason({ type: 'array', items: [{ type: 'string' }] }), /\/items: must be a schema in draft 2020-12/);
  });

  test('an unknown or remote $schema dialect is unusable, named in the reason', async () => {
    assert.match(
      await unusableReason({ $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }),
      /unsupported dialect "http:\/\/json-schema.org\/draft-04\/schema#"/,
    );
    assert.match(await unusableReason({ $schema: 'https://example.com/my-meta', type: 'object' }), /unsupported dialect/);
    assert.match(await unusableReason({ $schema: 7 }), /\/\$schema: must be a string/);
    assert.match(await unusableReason({ properties: { a: { $schema: D7 } } }), /\/properties\/a\/\$schema: names another dialect/);
  });

  test('format is an annotation: never a reason to refuse', async () => {
    const t = toolsOf({ t: { type: 'object', properties: { u: { type: 'string', format: 'uri' }, e: { format: 'email' }, x: { format: 'no-such-format' } } } });
    assert.deepEqual(await t.checkArguments('t', { u: 'not a uri', e: 'not an email', x: 'whatever' }), { ok: true });
    // A member named "format" is not the keyword: its schema still applies.
    const member = toolsOf({ t: { type: 'object', properties: { format: { enum: ['json', 'csv'] } } } });
    assert.deepEqual(
      (await member.checkArguments('t', { format: 'xml' })).errors.map((e) => `${e.path} ${e.keyword}`),
      ['/format enum'],
    );
  });
});

describe('what is never done', () => {
  test('a remote $ref is refused when the schema is compiled; nothing connects to it', async () => {
    let connections = 0;
    const server = createServer((_req, res) => {
      res.end('{"type":"string"}');
    });
    server.on('connection', () => connections++);
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${server.address().port}/schema.json`;
      const tools = toolsOf({ a: { type: 'object', properties: { x: { $ref: url } } }, b: { $id: url, $ref: `${url}#/nope` }, c: { $schema: url } });
      for (const name of ['a', 'b', 'c']) {
        const v = await tools.checkArguments(name, { x: 'y' });
        assert.equal(v.kind, 'unusable', name);
      }
      assert.match(
        (await tools.checkArguments('a', {})).reason,
        /\/properties\/x\/\$ref: "http:\/\/127\.0\.0\.1:\d+\/schema\.json" does not resolve inside the schema \(mcpguard never fetches a schema\)/,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(connections, 0);
      // The server did answer: a fetch would have found it.
      assert.equal(await (await fetch(url)).text(), '{"type":"string"}');
      assert.equal(connections, 1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('a $ref to an $id inside the schema resolves locally', async () => {
    const schema = {
      type: 'object',
      properties: { x: { $ref: 'https://example.com/inner' } },
      $defs: { i: { $id: 'https://example.com/inner', type: 'string' } },
    };
    const t = toolsOf({ t: schema });
    assert.deepEqual(await t.checkArguments('t', { x: 's' }), { ok: true });
    assert.equal((await t.checkArguments('t', { x: 1 })).errors[0].keyword, 'type');
  });
});

describe('bounds', () => {
  const nested = (depth) => {
    let s = { type: 'string' };
    for (let i = 0; i < depth; i++) s = { type: 'object', properties: { a: s } };
    return s;
  };
  const value = (depth) => {
    let v = 'x';
    for (let i = 0; i < depth; i++) v = { a: v };
    return v;
  };

  test(`a schema nested ${MAX_SCHEMA_DEPTH} deep is checked; one level more is unusable`, async () => {
    assert.deepEqual(await toolsOf({ t: nested(MAX_SCHEMA_DEPTH) }).checkArguments('t', value(MAX_SCHEMA_DEPTH)), { ok: true });
    // Named at the first place too deep: /properties/a repeated 64 times.
    assert.equal(
      await unusableReason(nested(MAX_SCHEMA_DEPTH + 1)),
      `${'/properties/a'.repeat(MAX_SCHEMA_DEPTH).slice(0, 100)}…: nests deeper than ${MAX_SCHEMA_DEPTH} subschemas`,
    );
    assert.match(await unusableReason(nested(20000)), /nests (deeper than|too deeply)/);
  });

  test('a $ref chain longer than the bound is unusable; so is a fan-out that doubles per level', async () => {
    const chain = { $defs: {}, $ref: '#/$defs/d0' };
    for (let i = 0; i < 100; i++) chain.$defs[`d${i}`] = { $ref: `#/$defs/d${i + 1}` };
    chain.$defs.d100 = { type: 'object' };
    assert.match(await unusableReason(chain), new RegExp(`with its \\$refs followed, the schema nests deeper than ${MAX_SCHEMA_DEPTH}`));
    const fan = { $defs: { a20: { type: 'object' } }, $ref: '#/$defs/a0' };
    for (let i = 0; i < 20; i++) fan.$defs[`a${i}`] = { allOf: [{ $ref: `#/$defs/a${i + 1}` }, { $ref: `#/$defs/a${i + 1}` }] };
    assert.match(await unusableReason(fan), new RegExp(`expands to more than ${MAX_EXPANDED_SUBSCHEMAS} subschemas`));
  });

  test('a cycle that never moves into the value is unusable; a recursive schema is checked as deep as the value goes', async () => {
    assert.match(await unusableReason({ $ref: '#' }), /never ends/);
    assert.match(
      await unusableReason({ $defs: { a: { anyOf: [{ type: 'string' }, { $ref: '#/$defs/b' }] }, b: { not: { $ref: '#/$defs/a' } } }, $ref: '#/$defs/a' }),
      /never ends/,
    );
    const tree = { type: 'object', properties: { next: { $ref: '#' } } };
    const t = toolsOf({ t: tree });
    let deep = {};
    for (let i = 0; i < 200; i++) deep = { next: deep };
    assert.deepEqual(await t.checkArguments('t', deep), { ok: true });
    // Arguments deeper than the stack: refused, not thrown.
    let deeper = {};
    for (let i = 0; i < 200000; i++) deeper = { next: deeper };
    const v = await t.checkArguments('t', deeper);
    assert.deepEqual(v, {
      ok: false,
      kind: 'invalid',
      errors: [{ path: '', keyword: 'depth', message: 'it is nested too deeply or fails in too many places to check' }],
    });
  });
});

describe('unusable schemas', () => {
  test('a malformed schema is unusable, the reason names the place, and it is reported once', async () => {
    const tools = toolsOf({ t: { type: 'object', properties: { a: { type: 'strng' } } } });
    const first = await tools.checkArguments('t', { a: 'x' });
    assert.deepEqual(first, { ok: false, kind: 'unusable', reason: '/properties/a/type: "strng" is not a JSON Schema type', first: true });
    assert.equal((await tools.checkArguments('t', {})).first, false);
    // The same schema listed again after a list change: still reported once.
    tools.learnPage([{ name: 't', inputSchema: { type: 'object', properties: { a: { type: 'strng' } } } }], true);
    assert.equal((await tools.checkArguments('t', {})).first, false);
    // A different fault is news.
    tools.learnPage([{ name: 't', inputSchema: { type: 'object', properties: { a: { minLength: -1 } } } }], true);
    assert.deepEqual(await tools.checkArguments('t', {}), {
      ok: false,
      kind: 'unusable',
      reason: '/properties/a/minLength: must be a non-negative integer',
      first: true,
    });
  });

  test('each malformed keyword is named', async () => {
    const cases = [
      [{ required: 'a' }, '/required: must be an array of strings'],
      [{ properties: { a: { pattern: '(' } } }, '/properties/a/pattern: is not a valid regular expression'],
      [{ patternProperties: { '[': {} } }, '/patternProperties/[: is not a valid regular expression'],
      [{ anyOf: [] }, '/anyOf: must be a non-empty array of schemas'],
      [{ properties: { a: 3 } }, '/properties/a: must be a schema'],
      [{ multipleOf: 0 }, '/multipleOf: must be a number greater than 0'],
      [{ maximum: '9' }, '/maximum: must be a number'],
      [{ properties: { x: { $dynamicRef: '#meta' } } }, '$dynamicRef is not supported'],
      [{ $defs: { a: { $ref: '#/$defs/missing' } } }, '/$defs/a/$ref: "#/$defs/missing" does not resolve'],
    ];
    for (const [schema, expected] of cases)
      assert.ok((await unusableReason(schema)).includes(expected), `${JSON.stringify(schema)}: ${await unusableReason(schema)}`);
  });

  test('a tool without an inputSchema, or listed twice with different ones, fails closed', async () => {
    const tools = new ToolSchemas();
    tools.learnPage([{ name: 'bare' }, { name: 'twice', inputSchema: { type: 'object' } }], true);
    tools.learnPage([{ name: 'twice', inputSchema: { type: 'object', required: ['x'] } }], false);
    assert.equal((await tools.checkArguments('bare', {})).reason, 'the tool has no inputSchema');
    assert.match((await tools.checkArguments('twice', { x: 1 })).reason, /listed this tool more than once/);
  });
});

describe('pages, generations and forget()', () => {
  test('pages add to a generation, a first page starts a new one, forget() empties it', async () => {
    const tools = new ToolSchemas({ protocolVersion: '2025-11-25' });
    tools.learnPage([{ name: 'a', inputSchema: { type: 'object', properties: { x: { type: 'string' } } } }, 'junk', { name: 7 }], true);
    const g1 = tools.generation;
    tools.learnPage([{ name: 'b', inputSchema: { type: 'object' } }], false);
    assert.deepEqual(tools.names(), ['a', 'b']);
    assert.equal(tools.generation, g1);
    assert.equal((await tools.checkArguments('a', { x: 1 })).kind, 'invalid');
    // The list changed: a's schema now wants a number.
    tools.forget();
    assert.equal(tools.known('a'), false);
    assert.deepEqual(await tools.checkArguments('a', { x: 1 }), { ok: false, kind: 'unknown_tool' });
    tools.learnPage([{ name: 'a', inputSchema: { type: 'object', properties: { x: { type: 'number' } } } }], true);
    assert.ok(tools.generation > g1);
    assert.deepEqual(tools.names(), ['a']);
    assert.deepEqual(await tools.checkArguments('a', { x: 1 }), { ok: true });
    assert.equal((await tools.checkArguments('a', { x: 's' })).kind, 'invalid');
  });

  test('absent arguments are checked as {}', async () => {
    const tools = toolsOf({ free: { type: 'object' }, strict: { type: 'object', required: ['q'] } });
    assert.deepEqual(await tools.checkArguments('free', undefined), { ok: true });
    assert.deepEqual((await tools.checkArguments('strict', undefined)).errors, [{ path: '/q', keyword: 'required', message: 'is required' }]);
    assert.equal((await tools.checkArguments('strict', [])).errors[0].keyword, 'type');
  });
});

describe('the text a model reads', () => {
  const schema = {
    type: 'object',
    additionalProperties: false,
    required: ['path', 'mode'],
    properties: { path: { type: 'string', pattern: '^/' }, mode: { enum: ['r', 'w'] }, n: { type: 'integer', minimum: 1 } },
  };

  test('names each failing path and keyword, quotes no argument value, and is the same every time', async () => {
    const tools = toolsOf({ open: schema });
    const args = { path: 'hunter2-secret', mode: 'x', n: 0, 'bad\nkey': 'hunter2' };
    const v = await tools.checkArguments('open', args);
    const text = verdictText(v, 'open');
    assert.equal(text, verdictText(await tools.checkArguments('open', args), 'open'));
    assert.equal(
      text,
      [
        'Invalid arguments for tool "open": they do not match the tool\'s inputSchema, so the call was not sent.',
        '- /path: pattern: must match the pattern "^/"',
        '- /mode: enum: must be one of "r", "w"',
        '- /n: minimum: must be >= 1',
        '- and 1 more',
        'Correct the arguments and call the tool again.',
      ].join('\n'),
    );
    assert.ok(!text.includes('hunter2'));
    assert.deepEqual(v.errors[3], { path: '/bad\nkey', keyword: 'additionalProperties', message: 'is not allowed' });
  });

  test('a failed anyOf, oneOf or not is one failing place, not one per alternative', async () => {
    const tools = toolsOf({
      t: {
        type: 'object',
        properties: {
          a: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'number' } }] },
          b: { oneOf: [{ type: 'integer' }, { type: 'number' }] },
          c: { not: { const: 0 } },
        },
      },
    });
    const v = await tools.checkArguments('t', { a: ['x'], b: 1, c: 0 });
    assert.deepEqual(v.errors, [
      { path: '/a', keyword: 'anyOf', message: 'must match at least one of the 2 alternatives in anyOf' },
      { path: '/b', keyword: 'oneOf', message: 'must match exactly one of the 2 alternatives in oneOf' },
      { path: '/c', keyword: 'not', message: 'must not match the schema under not' },
    ]);
  });

  test('a path with control characters is escaped onto one line; unusable and unknown tools have their own text', async () => {
    const v = await toolsOf({ t: { type: 'object', properties: { 'a\nb': { type: 'string' } } } }).checkArguments('t', { 'a\nb': 1 });
    assert.match(verdictText(v, 't'), /^- "\/a\\nb": type: must be string \(got integer\)$/m);
    assert.equal(verdictText({ ok: false, kind: 'unknown_tool' }, 'nope'), 'Unknown tool "nope": the server did not list it.');
    const u = await toolsOf({ t: { type: 'strng' } }).checkArguments('t', {});
    assert.equal(
      verdictText(u, 't'),
      'Tool "t" cannot be called through mcpguard: its inputSchema cannot be checked (/type: "strng" is not a JSON Schema type). The call was not sent; retrying will not help.',
    );
    assert.equal(verdictText({ ok: true }, 't'), '');
  });
});

describe('policy "when" clauses', () => {
  before(loadEngine);

  test("the issue's example matches rm commands only", () => {
    const when = compileWhen({ properties: { command: { pattern: '^rm ' } }, required: ['command'] });
    assert.equal(when({ command: 'rm -rf /' }), true);
    assert.equal(when({ command: 'ls' }), false);
    assert.equal(when(undefined), false);
    assert.equal(compileWhen({})(undefined), true);
    assert.equal(compileWhen(true)({ any: 1 }), true);
  });

  test('a "when" clause answers as the full check does (which also explains), on random schemas and values', () => {
    let matched = 0;
    let missed = 0;
    fc.assert(
      fc.property(randomSchema, fc.array(json, { minLength: 1, maxLength: 6 }), (s, values) => {
        let when;
        let compiled;
        try {
          when = compileWhen(s);
          compiled = compileSchema(s, resolveDialect(s, null));
        } catch {
          return; // a schema the engine refuses: compileWhen's refusal is tested below
        }
        for (const value of values) {
          const full = compiled.check(value);
          if (!full.ok && full.kind === 'unchecked') {
            assert.throws(() => when(value), { code: 'when_unchecked' });
            continue;
          }
          assert.equal(when(value), full.ok, `schema ${JSON.stringify(s)}, value ${JSON.stringify(value)}`);
          if (full.ok) matched++;
          else missed++;
        }
      }),
      { numRuns: 3000 },
    );
    // Both answers must be exercised, or the agreement proves little.
    assert.ok(matched > 1000 && missed > 1000, `matched ${matched}, missed ${missed}`);
  });

  test('a bad schema throws a GuardError naming what is wrong', () => {
    assert.throws(() => compileWhen({ properties: { command: { pattern: '(' } } }), {
      name: 'GuardError',
      code: 'bad_schema',
      message: /^"when" is not a usable JSON Schema: \/properties\/command\/pattern: is not a valid regular expression/,
    });
    assert.throws(() => compileWhen({ $ref: 'https://example.com/x' }), { code: 'bad_schema', message: /does not resolve inside the schema/ });
    assert.throws(() => compileWhen('rm'), { code: 'bad_schema', message: /must be a JSON Schema/ });
  });
});

describe('never throws', () => {
  test('any JSON value as arguments gets a verdict, and its text is printable lines', async () => {
    const tools = toolsOf({
      tree: {
        type: 'object',
        properties: { name: { type: 'string' }, kids: { type: 'array', items: { $ref: '#' } } },
        additionalProperties: { type: ['number', 'null'] },
      },
      mixed: {
        type: 'object',
        properties: {
          a: {
            anyOf: [
              { type: 'string', minLength: 2 },
              { type: 'array', uniqueItems: true },
            ],
          },
          b: { oneOf: [{ const: 1 }, { enum: [1, 2] }] },
        },
        patternProperties: { '^x': { not: { type: 'object' } } },
        dependentRequired: { a: ['b'] },
        propertyNames: { maxLength: 5 },
      },
      open: {},
    });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('tree', 'mixed', 'open'), fc.jsonValue(), async (name, args) => {
        const v = await tools.checkArguments(name, args);
        assert.ok(v.ok || v.kind === 'invalid', JSON.stringify(v));
        if (!v.ok) {
          assert.ok(v.errors.length > 0);
          for (const line of verdictText(v, name).split('\n')) assert.match(line, /^[^\x00-\x1f]*$/);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('the engine loads lazily', { timeout: TIMEOUT }, () => {
  test("importing, constructing and learning load neither the library nor the engine's modules; the first check does", async () => {
    // A child process with a resolve hook that reports every module it resolves.
    const hook = `data:text/javascript,${encodeURIComponent(`export async function resolve(s, c, next) { const r = await next(s, c); if (/cfworker|engine|inspect|bounds|explain|keywords|dialect|limits/.test(s)) process.stderr.write('LOADED ' + s + '\\n'); return r; }`)}`;
    const script = `
      import { register } from 'node:module';
      register(${JSON.stringify(hook)});
      const { ToolSchemas, engineLoaded } = await import(${JSON.stringify(join(ROOT, 'dist', 'gate', 'schema', 'schema.js'))});
      const tools = new ToolSchemas();
      tools.learnPage([{ name: 'echo', inputSchema: { type: 'object' } }], true);
      process.stderr.write('LEARNED ' + engineLoaded() + ' ' + tools.checkArgumentsNow('echo', {}) + '\\n');
      const v = await tools.checkArguments('echo', {});
      process.stderr.write('CHECKED ' + engineLoaded() + ' ' + JSON.stringify(v) + ' ' + JSON.stringify(tools.checkArgumentsNow('echo', {})) + '\\n');
    `;
    const { stderr } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, timeout: 30000 });
    const lines = stderr.trim().split('\n');
    assert.equal(lines[0], 'LEARNED false null', stderr);
    assert.equal(lines.at(-1), 'CHECKED true {"ok":true} {"ok":true}', stderr);
    // Everything else of the gate, and the library, loads with the first check.
    assert.deepEqual(
      [...new Set(lines.slice(1, -1))].sort(),
      ['./bounds.js', './dialect.js', './engine.js', './explain.js', './inspect.js', './keywords.js', './limits.js', '@cfworker/json-schema']
        .map((s) => `LOADED ${s}`)
        .sort(),
      stderr,
    );
  });
});
