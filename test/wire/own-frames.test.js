// Frames mcpguard writes on its own (answers, refusals, cards, its own
// requests) are built by the helpers of wire/jsonrpc.ts, never by template
// strings elsewhere: one place keeps the id's spelling and the envelope right.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cancellation, classifyFrame, errorResponse, requestFrame, resultResponse } from '../../dist/wire/jsonrpc.js';
import { ROOT } from '../helpers/run.js';

/** A client id with its own spelling (an escaped string): mcpguard answers with the same bytes. */
const rawId = classifyFrame(Buffer.from('{"jsonrpc":"2.0","id":"\\u0061","method":"ping"}\n'), { allowBatch: false }).id;

test('a result response keeps the id as the client spelled it', () => {
  assert.equal(resultResponse(7, { ok: true }).toString(), '{"jsonrpc":"2.0","id":7,"result":{"ok":true}}\n');
  assert.equal(resultResponse('x', {}).toString(), '{"jsonrpc":"2.0","id":"x","result":{}}\n');
  assert.equal(resultResponse(rawId, { a: [1] }).toString(), '{"jsonrpc":"2.0","id":"\\u0061","result":{"a":[1]}}\n');
});

test('a request splices its params as JSON text, or has none', () => {
  assert.equal(requestFrame('mcpguard-1', 'tools/list').toString(), '{"jsonrpc":"2.0","id":"mcpguard-1","method":"tools/list"}\n');
  assert.equal(
    requestFrame('mcpguard-2', 'tools/list', '{"cursor":"c"}').toString(),
    '{"jsonrpc":"2.0","id":"mcpguard-2","method":"tools/list","params":{"cursor":"c"}}\n',
  );
  assert.equal(
    requestFrame(3, 'elicitation/create', JSON.stringify({ message: 'm' })).toString(),
    '{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"m"}}\n',
  );
});

test('an error and a cancellation keep their bytes', () => {
  assert.equal(
    errorResponse(rawId, -32602, 'mcpguard: unknown tool "t": no such tool', { state: 'rejected', rule: 'unknown_tool' }).toString(),
    '{"jsonrpc":"2.0","id":"\\u0061","error":{"code":-32602,"message":"mcpguard: unknown tool \\"t\\": no such tool","data":{"source":"mcpguard","state":"rejected","rule":"unknown_tool"}}}\n',
  );
  assert.equal(
    cancellation('mcpguard-card-1', 'mcpguard: the approval timed out').toString(),
    '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcpguard-card-1","reason":"mcpguard: the approval timed out"}}\n',
  );
});

test('no file outside src/wire/ spells a JSON-RPC envelope itself', () => {
  const src = join(ROOT, 'src');
  const spelled = [];
  for (const file of readdirSync(src, { recursive: true }).map(String)) {
    if (!file.endsWith('.ts') || file.startsWith('wire/')) continue;
    readFileSync(join(src, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (line.includes('"jsonrpc":"2.0"')) spelled.push(`src/${file}:${i + 1}`);
      });
  }
  assert.deepEqual(spelled, [], 'build the frame with a helper of src/wire/jsonrpc.ts');
});
