/**
 * One OTLP/HTTP POST, bounded in every direction the collector controls: a
 * timeout for the whole exchange, an abort from the exporter's shutdown, and
 * a response body read only up to a cap (a collector answering 10 MB costs
 * at most the cap, then the socket is destroyed). Sockets are unref'd: an
 * export in flight never keeps mcpguard's process alive on its own.
 */
import http from 'node:http';
import https from 'node:https';

/** The most of a response body read (OTLP recommends clients cap it; only partial_success is read from it). */
export const RESPONSE_CAP = 1024 * 1024;

export type PostResult = { kind: 'answered'; status: number; retryAfter: string | undefined; body: Buffer | null } | { kind: 'failed'; why: string };

// Keep-alive per the OTLP spec ("the client SHOULD keep the connection alive"); a few sockets, one per signal.
const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 3 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 3 }),
};

/** The agent for a target: the shared one, or one of its own when it has a CA or a client certificate. */
export function agentFor(url: string, tls: Readonly<{ ca?: Buffer; cert?: Buffer; key?: Buffer }> | undefined): http.Agent {
  if (!url.startsWith('https:')) return agents.http;
  if (tls === undefined) return agents.https;
  return new https.Agent({ keepAlive: true, maxSockets: 1, ...tls });
}

/**
 * POSTs `body` and resolves with the status and a body of at most
 * RESPONSE_CAP bytes (null when the answer was longer). Never rejects: a
 * refused connection, a reset, a timeout, an abort or an answer that is not
 * HTTP all resolve as `failed` with a short reason (no header value in it).
 * Resolves only once the request is closed, its body written or dropped with
 * the socket (a collector may answer before it read the whole body): the
 * caller then writes its next request over `body`. The timeout bounds that
 * too.
 */
export function post(
  url: string,
  headers: Readonly<Record<string, string>>,
  body: Buffer,
  timeoutMs: number,
  abort: AbortSignal,
  agent: http.Agent = agentFor(url, undefined),
): Promise<PostResult> {
  return new Promise((resolve) => {
    let result: PostResult | null = null;
    const finish = (r: PostResult): void => {
      result ??= r;
    };
    let req: http.ClientRequest;
    try {
      req = (url.startsWith('https:') ? https : http).request(url, {
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': String(body.length) },
      });
    } catch (error) {
      resolve({ kind: 'failed', why: (error as Error).message });
      return;
    }
    const timer = setTimeout(() => {
      finish({ kind: 'failed', why: `no answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    timer.unref();
    const onAbort = (): void => {
      finish({ kind: 'failed', why: 'aborted' });
      req.destroy();
    };
    // Every way a request ends (answered, failed, cut, destroyed) closes it.
    req.on('close', () => {
      clearTimeout(timer);
      abort.removeEventListener('abort', onAbort);
      resolve(result ?? { kind: 'failed', why: 'closed without an answer' });
    });
    if (abort.aborted) return onAbort();
    abort.addEventListener('abort', onAbort, { once: true });
    req.on('socket', (socket) => socket.unref());
    req.on('error', (error) => finish({ kind: 'failed', why: (error as NodeJS.ErrnoException).code ?? error.message }));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= RESPONSE_CAP) chunks.push(chunk);
        else {
          // Over the cap: what was read is dropped and the rest never read.
          finish({ kind: 'answered', status: res.statusCode ?? 0, retryAfter, body: null });
          res.destroy();
          req.destroy();
        }
      });
      res.on('end', () => finish({ kind: 'answered', status: res.statusCode ?? 0, retryAfter, body: Buffer.concat(chunks) }));
      res.on('error', (error) => finish({ kind: 'failed', why: error.message }));
      // After 'end' this is a no-op; before it, the collector hung up mid-answer.
      res.on('close', () => finish({ kind: 'failed', why: 'answer cut short' }));
    });
    req.end(body);
  });
}

/** Most a collector's Retry-After may hold a batch back, ms. */
export const MAX_RETRY_AFTER_MS = 30_000;

/** Retry-After as a delay in ms: delta-seconds or an HTTP date, capped; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/**
 * The count a 200's partial_success rejected (rejected_spans,
 * rejected_log_records, rejected_data_points: field 1 of field 1 in every
 * Export*ServiceResponse). An empty, unreadable or hostile body reads as 0:
 * the collector said 200.
 */
export function rejectedCount(body: Buffer, json: boolean): number {
  if (body.length === 0) return 0;
  if (json) {
    try {
      const parsed: unknown = JSON.parse(body.toString('utf8'));
      const partial = (parsed as { partialSuccess?: Record<string, unknown> } | null)?.partialSuccess;
      if (typeof partial !== 'object' || partial === null) return 0;
      const n = Number(partial.rejectedSpans ?? partial.rejectedLogRecords ?? partial.rejectedDataPoints ?? 0);
      return Number.isSafeInteger(n) && n > 0 ? n : 0;
    } catch {
      return 0;
    }
  }
  const partial = protoField(body, 1, 2);
  const n = Buffer.isBuffer(partial) ? protoField(partial, 1, 0) : null;
  return typeof n === 'number' && n > 0 ? n : 0;
}

/** The last occurrence of `field` with wire type `wire` (0 varint → number, 2 bytes → Buffer), skipping others; null if absent or malformed. */
function protoField(buf: Buffer, field: number, wire: 0 | 2): Buffer | number | null {
  let pos = 0;
  let found: Buffer | number | null = null;
  const varint = (): number | null => {
    let n = 0;
    for (let shift = 1; pos < buf.length && shift < 2 ** 56; shift *= 128) {
      const b = buf[pos++]!;
      n += (b & 0x7f) * shift;
      if (b < 0x80) return n;
    }
    return null;
  };
  while (pos < buf.length) {
    const tag = varint();
    if (tag === null) return null;
    const type = tag % 8;
    if (type === 0) {
      const v = varint();
      if (v === null) return null;
      if (Math.floor(tag / 8) === field && wire === 0) found = v;
    } else if (type === 2) {
      const len = varint();
      if (len === null || pos + len > buf.length) return null;
      if (Math.floor(tag / 8) === field && wire === 2) found = buf.subarray(pos, pos + len);
      pos += len;
    } else if (type === 1) pos += 8;
    else if (type === 5) pos += 4;
    else return null;
  }
  return pos === buf.length ? found : null;
}
