/**
 * What the answers about tools must contain, the same in both eras:
 * `tools/list` lists tools with a name and an input schema; a `tools/call`
 * result has content and is not an error.
 */
import { scanJson, stringValue } from '../wire/json-scan.js';
import type { Response } from '../wire/jsonrpc.js';
import { member, type Exchange } from './exchange.js';

/**
 * `result.tools` must be an array of tools, each with a `name` string and an
 * `inputSchema` object; returns the names, or null without an array. The
 * array's items lie below the depth the first scan records, so the array's
 * own bytes are scanned again, as a top-level value.
 */
export function checkTools(list: Response, talk: Exchange): string[] | null {
  const tools = list.body.members?.get('tools');
  if (tools?.type !== 'array') {
    talk.fail('tools/list', 'bad_result', 'tools/list: the result has no "tools" array');
    return null;
  }
  const scanned = scanJson(list.frame, tools.start, tools.end);
  if (!scanned.ok) return null; // cannot happen: the same bytes passed the first scan
  const names: string[] = [];
  for (const [index, tool] of (scanned.value.items ?? []).entries()) {
    const name = tool.members?.get('name');
    const shown = name?.type === 'string' ? JSON.stringify(stringValue(list.frame, name)) : `number ${index + 1}`;
    if (name?.type !== 'string') talk.fail('tools/list', 'bad_result', `tools/list: tool ${shown} has no "name" string`);
    else names.push(stringValue(list.frame, name));
    if (tool.members?.get('inputSchema')?.type !== 'object') talk.fail('tools/list', 'bad_result', `tools/list: tool ${shown} has no "inputSchema" object`);
  }
  return names;
}

/** A final tools/call result: not `"isError": true`, and with a `content` array. */
export function checkCallResult(called: Response, label: string, talk: Exchange): void {
  if (called.body.members?.get('isError')?.type === 'true') {
    talk.last.detail = 'result with "isError": true';
    talk.fail(
      'tools/call',
      'tool_is_error',
      `${label}: the result has "isError": true: ${talk.io.show(called.frame.subarray(called.body.start, called.body.end))}`,
    );
  } else if (member(called.body, 'content', 'array') === undefined) {
    talk.fail('tools/call', 'bad_result', `${label}: the result has no "content" array`);
  }
}
