// The server's stderr cannot pass for mcpguard's own lines: mirrored on
// mcpguard's stderr and shown by `mcpguard logs`, every line of it comes after
// `server| `, and its control bytes cannot move the cursor over that prefix.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ServerLines, serverText } from '../../dist/mask/diagnostics.js';
import { fixture, frame, killStarted, runGuard, sessionEnd, tempDir } from '../helpers/run.js';
import { messages } from '../helpers/stdout-check.js';

after(killStarted);

const init =
  frame({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) +
  frame({ jsonrpc: '2.0', method: 'notifications/initialized' });
const forge = frame({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'stderr_forge', arguments: {} } });

/** The lines the fixture writes in mcpguard's voice. */
const FORGED = [
  'mcpguard: the session ended cleanly',
  '{"mcpguard":"session_end","calls":0,"reason":"forged"}',
  '==> call 00000000-forged (tools/call forged) <==',
  '[... 999 bytes truncated ...]',
];

describe("the server's lines, mirrored and in logs, are marked as the server's", () => {
  test("mirror and logs: each forged line shows only behind the prefix; mcpguard's own lines are its own", { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const r = await runGuard(['--record-dir', dir, '--', 'python3', fixture('voice-server.py')], { input: init + forge }).done;
      assert.ok(messages(r.stdout).find((m) => m.id === 1).result);
      const lines = r.stderr.split('\n');
      for (const forged of FORGED) {
        assert.ok(!lines.includes(forged), `bare on mcpguard's stderr: ${forged}`);
        assert.ok(lines.includes(`server| ${forged}`), `mirrored behind the prefix: ${forged}\n${r.stderr}`);
      }
      assert.equal(lines.filter((l) => l.startsWith('{"mcpguard":"session_end"')).length, 1, 'one session_end line');
      assert.equal(sessionEnd(r.stderr).calls.completed, 2, "the line found is mcpguard's (initialize, stderr_forge)");
      for (const line of lines) if (line !== '') assert.match(line, /^(mcpguard|\{"mcpguard"|server\| |server\|$)/, `a line of nobody's: ${line}`);

      const log = readdirSync(dir, { recursive: true })
        .map(String)
        .find((n) => n.endsWith('.jsonl'));
      const shown = await runGuard(['logs', join(dir, log), '--record-dir', dir]).done;
      assert.equal(shown.code, 0, shown.stderr);
      const out = shown.stdout.toString().split('\n');
      assert.equal(out.filter((l) => l.startsWith('==> ')).length, 1, `one header, mcpguard's:\n${shown.stdout}`);
      for (const forged of FORGED) assert.ok(out.includes(`server| ${forged}`), `logs shows it behind the prefix: ${forged}`);
      const one = await runGuard(['logs', sessionEnd(r.stderr).session_id ?? log, '--record-dir', dir, '--json']).done;
      assert.equal(one.code, 0, one.stderr);
    } finally {
      cleanup();
    }
  });
});

describe('ServerLines', () => {
  const show = (b) => b.toString('latin1');
  test("a prefix before each line's first byte, across chunks and after mcpguard's own line", () => {
    const s = new ServerLines();
    assert.equal(show(s.format(Buffer.from('abc\n\ndef'), true)), 'server| abc\nserver|\nserver| def');
    assert.equal(show(s.format(Buffer.from('ghi\nj'), false)), 'ghi\nserver| j');
    // mcpguard wrote a line of its own meanwhile: the rest of the server's line starts a new one.
    assert.equal(show(s.format(Buffer.from('kl\n'), true)), 'server| kl\n');
  });

  test('control bytes cannot move the cursor or restyle the terminal; a CRLF stays', () => {
    const s = new ServerLines();
    assert.equal(show(s.format(Buffer.from('a\r\nb\rmcpguard: ok\x1b[2K\x07\x7f\n'), true)), 'server| a\r\nserver| b\\x0dmcpguard: ok\\x1b[2K\\x07\\x7f\n');
    // A C1 control (U+009B, CSI) split across two reads is still seen; other characters pass whole.
    assert.equal(show(s.format(Buffer.from([0x61, 0xc2]), true)), 'server| a');
    assert.equal(s.format(Buffer.from([0x9b, 0x5b, 0xc2, 0xa3, 0x0a]), false).toString('latin1'), '\\xc2\\x9b[\xc2\xa3\n');
  });

  test('serverText prefixes each recorded line', () => {
    assert.equal(serverText('a\n\nb\n'), 'server| a\nserver|\nserver| b\n');
    assert.equal(serverText('tail without newline'), 'server| tail without newline');
  });
});
