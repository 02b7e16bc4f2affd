// Install and uninstall as text edits, on generated config files: any
// whitespace, comments, trailing commas, key order, line endings, escapes and
// names. After install the file parses (jsonc-parser's own parse; Python's
// tomllib for TOML) to the wrapped command and the same everything else;
// after uninstall it is the original text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { parse } from 'jsonc-parser';
import { jsonEntries } from '../../dist/install/jsonc.js';
import { tomlEntries } from '../../dist/install/toml.js';
import { applyEdits, installEdits, uninstallEdits } from '../../dist/install/wrap.js';

const NODE = '/usr/local/bin/node';
const BIN = '/opt/mcpguard/bin/mcpguard.js';
const guardFor = (name) => [BIN, '--name', name, '--'];

const gap = fc.constantFrom('', ' ', '\n  ', '\r\n\t', ' /* c */ ', ' // c\n ', '\n\n    ');
const str = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('--', '-y', 'données', '🚀', 'a"b', 'c:\\d', '\u202e'));
const server = fc.record({
  name: str,
  command: str,
  args: fc.option(fc.array(str, { maxLength: 4 }), { nil: undefined }),
  env: fc.option(fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 2 }), { nil: undefined }),
  argsFirst: fc.boolean(),
});

/** A JSON(C) object written with generated gaps and trailing commas. */
function printObject(members, g, trailing) {
  const parts = members.map(([k, v], i) => `${g[i % g.length]}${JSON.stringify(k)}${g[(i + 1) % g.length]}:${g[(i + 2) % g.length]}${v}`);
  return `{${parts.join(',')}${trailing && parts.length > 0 ? ',' : ''}${g[0]}}`;
}
const printArray = (xs, g, trailing) =>
  `[${xs.map((x, i) => `${g[i % g.length]}${JSON.stringify(x)}`).join(',')}${trailing && xs.length > 0 ? ',' : ''}${g[1 % g.length]}]`;

function jsonFile(servers, g, trailing) {
  const entries = servers.map((s) => {
    const members = [['command', JSON.stringify(s.command)]];
    if (s.args !== undefined) members[s.argsFirst ? 'unshift' : 'push'](['args', printArray(s.args, g, trailing)]);
    if (s.env !== undefined)
      members.push([
        'env',
        printObject(
          Object.entries(s.env).map(([k, v]) => [k, JSON.stringify(v)]),
          g,
          trailing,
        ),
      ]);
    return [s.name, printObject(members, g, trailing)];
  });
  return printObject(
    [
      ['other', '[1, 2.50, true]'],
      ['mcpServers', printObject(entries, g, trailing)],
    ],
    g,
    trailing,
  );
}

const unique = (servers) => servers.filter((s, i) => servers.findIndex((t) => t.name === s.name) === i);

test('JSONC: install wraps every server and changes nothing else; uninstall gives back the text', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(server, { maxLength: 4 }).map(unique),
      fc.array(gap, { minLength: 1, maxLength: 4 }),
      fc.boolean(),
      async (servers, g, trailing) => {
        const text = jsonFile(servers, g, trailing);
        const entries = await jsonEntries(text, 'mcpServers', false);
        assert.equal(entries.length, servers.length);
        const installed = applyEdits(
          text,
          entries.flatMap((e) => installEdits(text, e, NODE, guardFor(e.name))),
        );
        const before = parse(text, [], { allowTrailingComma: true });
        const after = parse(installed, undefined, { allowTrailingComma: true });
        for (const s of servers) {
          const was = before.mcpServers[s.name];
          const own = s.args === undefined ? [BIN, `--name=${s.name}`, '--'] : guardFor(s.name);
          assert.deepEqual(after.mcpServers[s.name], { ...was, command: NODE, args: [...own, s.command, ...(s.args ?? [])] });
        }
        assert.deepEqual(after.other, before.other);
        const back = await jsonEntries(installed, 'mcpServers', false);
        const restored = applyEdits(
          installed,
          back.flatMap((e) => {
            const r = uninstallEdits(installed, e);
            assert.ok(Array.isArray(r), r);
            return r;
          }),
        );
        assert.equal(restored, text);
      },
    ),
    { numRuns: 300 },
  );
});

const tomlGap = fc.constantFrom('', ' ', '\n  ', '\r\n', ' # c\n ');
const tomlStr = (s) => (/^[^'\n\r]*$/.test(s) && s.length % 2 === 0 ? `'${s}'` : JSON.stringify(s));

test('TOML: the same, checked by tomllib', async () => {
  const cases = fc.sample(fc.tuple(fc.array(server, { maxLength: 3 }).map(unique), tomlGap, fc.boolean(), fc.constantFrom('\n', '\r\n')), 150);
  const docs = [];
  for (const [servers, g, trailing, nl] of cases) {
    const body = servers.map((s) => {
      const lines = [`command = ${tomlStr(s.command)} # cmd`];
      if (s.args !== undefined)
        lines[s.argsFirst ? 'unshift' : 'push'](
          `args = [${s.args.map((a) => `${g}${tomlStr(a)}`).join(',')}${trailing && s.args.length > 0 ? ',' : ''}${g.replace(/#.*\n/, '\n')}]`,
        );
      lines.push('startup_timeout_sec = 1_000');
      if (s.env !== undefined)
        lines.push(
          `env = { ${Object.entries(s.env)
            .map(([k, v]) => `${JSON.stringify(k)} = ${JSON.stringify(v)}`)
            .join(', ')} }`,
        );
      return `[mcp_servers.${JSON.stringify(s.name)}]${nl}${lines.join(nl)}${nl}`;
    });
    const text = `# top${nl}x = 0x10${nl}${nl}${body.join(nl)}`;
    const entries = tomlEntries(text);
    assert.equal(entries.length, servers.length, text);
    const installed = applyEdits(
      text,
      entries.flatMap((e) => installEdits(text, e, NODE, guardFor(e.name))),
    );
    const bareLf = (t) => (t.match(/(^|[^\r])\n/g) ?? []).length;
    // A CRLF file stays CRLF (args that install adds to an entry without them end with the file's own line ending).
    if (bareLf(text) === 0) assert.equal(bareLf(installed), 0, `no bare LF: ${JSON.stringify(installed)}`);
    const back = tomlEntries(installed);
    assert.equal(
      applyEdits(
        installed,
        back.flatMap((e) => uninstallEdits(installed, e)),
      ),
      text,
    );
    docs.push({ servers, installed });
  }
  const py = 'import json,sys,tomllib\nprint(json.dumps([tomllib.loads(t).get("mcp_servers", {}) for t in json.load(sys.stdin)]))';
  const r = spawnSync('python3', ['-c', py], { input: JSON.stringify(docs.map((d) => d.installed)), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  JSON.parse(r.stdout).forEach((parsed, i) => {
    for (const s of docs[i].servers) {
      const own = s.args === undefined ? [BIN, `--name=${s.name}`, '--'] : guardFor(s.name);
      assert.deepEqual(parsed[s.name].command, NODE);
      assert.deepEqual(parsed[s.name].args, [...own, s.command, ...(s.args ?? [])], docs[i].installed);
      assert.equal(parsed[s.name].startup_timeout_sec, 1000);
      if (s.env !== undefined) assert.deepEqual(parsed[s.name].env, { ...s.env });
    }
  });
});
