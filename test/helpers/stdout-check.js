// The clean-stdout check of seed 000, on raw bytes: every line of a transcript
// must be one complete JSON-RPC 2.0 message, and the transcript must end with
// a newline. Failures name the first bad line and show its bytes.
import { isUtf8 } from 'node:buffer';

export function assertProtocolStdout(data) {
  if (data.length === 0) return;
  if (data[data.length - 1] !== 0x0a)
    throw new Error(`stdout ended without a complete frame: ${JSON.stringify(data.subarray(data.lastIndexOf(0x0a) + 1).toString('latin1'))}`);
  let start = 0;
  let number = 0;
  while (start < data.length) {
    const nl = data.indexOf(0x0a, start);
    const raw = data.subarray(start, nl);
    number++;
    start = nl + 1;
    const fail = (why) => {
      throw new Error(`non-protocol stdout on line ${number} (${why}): ${JSON.stringify(raw.toString('latin1'))}`);
    };
    if (!isUtf8(raw)) fail('not UTF-8');
    let message;
    try {
      message = JSON.parse(raw.toString('utf8'));
    } catch {
      fail('not JSON');
    }
    if (message === null || typeof message !== 'object' || Array.isArray(message)) fail('not an object');
    if (message.jsonrpc !== '2.0') fail('lacks JSON-RPC 2.0');
    const isNotification = typeof message.method === 'string' && !('id' in message);
    const isRequest = typeof message.method === 'string' && 'id' in message;
    const isResponse = 'id' in message && 'result' in message !== 'error' in message;
    if (!isNotification && !isRequest && !isResponse) fail('no permitted shape');
  }
}

/** Parse a clean transcript into messages. */
export function messages(data) {
  assertProtocolStdout(data);
  return data
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}
