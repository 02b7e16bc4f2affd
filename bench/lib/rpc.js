// The measuring side: raw pipes, frames written by hand, responses matched by
// id. No SDK client here: its own parsing and validation would be part of
// every number. Response lines are never decoded whole: the reader keeps the
// first bytes of each line (where "id" is) and counts the rest, so a 1 MiB
// result costs the client one memchr per chunk, whatever relay is in front.

const HEAD_BYTES = 128;
const ID_PATTERN = /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")/;

/** Calls `onLine(head, bytes, atNs)` for every complete line of `stream`. */
export function readLines(stream, onLine) {
  const head = Buffer.allocUnsafe(HEAD_BYTES);
  let headLength = 0;
  let lineBytes = 0;
  stream.on('data', (chunk) => {
    const at = process.hrtime.bigint();
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      const end = nl === -1 ? chunk.length : nl;
      if (headLength < HEAD_BYTES) headLength += chunk.copy(head, headLength, start, Math.min(end, start + HEAD_BYTES - headLength));
      lineBytes += end - start;
      if (nl === -1) return;
      onLine(head.subarray(0, headLength), lineBytes + 1, at);
      headLength = 0;
      lineBytes = 0;
      start = nl + 1;
      if (start >= chunk.length) return;
    }
  });
}

/** A JSON-RPC request line. */
export function requestFrame(id, method, params) {
  return Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
}

export const INITIALIZE_PARAMS = {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'mcpguard-bench', version: '1.0.0' },
};

/**
 * A client on the stdin/stdout pipes of a child. `call` resolves with the
 * response's arrival time (hrtime ns, taken when its last chunk was read),
 * its size in bytes and its first bytes. An error response rejects: a
 * benchmark that measured errors measured the wrong thing.
 */
export class Peer {
  constructor(child) {
    this.child = child;
    this.pending = new Map();
    this.nextId = 1;
    this.closedError = null;
    readLines(child.stdout, (head, bytes, at) => this.onLine(head, bytes, at));
    const gone = (why) => () => {
      this.closedError ??= new Error(why);
      for (const { reject } of this.pending.values()) reject(this.closedError);
      this.pending.clear();
    };
    child.stdout.on('end', gone('the process closed its stdout'));
    child.once('exit', (code, signal) => gone(`the process exited (${signal ?? code})`)());
  }

  onLine(head, bytes, at) {
    const text = head.toString('latin1');
    const match = ID_PATTERN.exec(text);
    // A JSON-RPC line whose id lies past the first bytes can only belong to the one request in flight.
    const lone = this.pending.size === 1 && text.startsWith('{') && text.includes('"jsonrpc"');
    const key = match !== null ? match[1] : lone ? this.pending.keys().next().value : undefined;
    const waiter = key === undefined ? undefined : this.pending.get(key);
    if (waiter === undefined) return; // a notification, or noise
    this.pending.delete(key);
    const errorAt = text.indexOf('"error"');
    const resultAt = text.indexOf('"result"');
    if (errorAt !== -1 && (resultAt === -1 || errorAt < resultAt)) {
      waiter.reject(new Error(`error response: ${text}`));
    } else if (text.includes('"io.mcpguard/refused"')) {
      // mcpguard's gate answered instead of the server: timing that would measure the refusal.
      waiter.reject(new Error(`mcpguard refused the call: ${text}`));
    } else {
      waiter.resolve({ at, bytes, head: text });
    }
  }

  /** Send a request; resolves when its response line is complete. */
  call(method, params) {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    const id = this.nextId++;
    const frame = requestFrame(id, method, params);
    return new Promise((resolve, reject) => {
      this.pending.set(String(id), { resolve, reject });
      this.child.stdin.write(frame);
    });
  }

  /** Write a pre-built frame for request `id` (ids from `reserveId`). */
  send(id, frame) {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    return new Promise((resolve, reject) => {
      this.pending.set(String(id), { resolve, reject });
      this.child.stdin.write(frame);
    });
  }

  reserveId() {
    return this.nextId++;
  }

  initialize() {
    return this.call('initialize', INITIALIZE_PARAMS);
  }
}
