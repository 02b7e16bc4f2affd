/**
 * What calls have to say to the export (their spans, stderr logs and metric
 * points), written a batch at a time. Written the moment each call ended, a
 * span is written with cold caches: between two calls the relay runs through
 * the wire, the gate and the records, and a span touches code and data of its
 * own (the runs, the keys, the arena's bytes). Measured in a relay on one CPU,
 * that cost several times what the same writer costs in a loop.
 *
 * So a call's end copies the facts of an ordinary call (a numeric id, no
 * tracestate, no decision, no stderr, no content) as numbers into
 * one row of a Float64Array, its strings as an index into a few shapes, and
 * nothing else: no object made, no reference kept, so a waiting call costs the
 * garbage collector nothing. The rows are written together by the same code
 * (the bytes are the same): when `capacity` calls wait, `delayMs` after the
 * first, or before the session's end or a metrics snapshot. One call in
 * `capacity` pays for the batch, after its own answer went out. A call that
 * does not fit a row is written at once, as before.
 */
import type { Call } from '../mcp/call.js';
import { RawId } from '../wire/request-id.js';
import type { CallFacts } from './call-span.js';

/** A row: the call's numbers (NaN: null). */
const STARTED = 0;
const DISPATCHED = 1;
const ENDED = 2;
const REQUEST_ID = 3;
/** The call id's 12 hex digits as a number (48 bits: exact in a double). */
const CALL_ID = 4;
const SCHEMA_MS = 5;
const POLICY_MS = 6;
const GENERATION = 7;
const SHAPE = 8;
/** The client's traceparent (55 characters, lowercase hex): version × 256 + flags (NaN: none), the trace id in four 32-bit parts, the parent in two. */
const TP_FLAGS = 9;
const TP_TRACE = 10;
const TP_PARENT = 14;
const ROW = 16;

/** What calls in a row share: their strings and the presence of the gate's timings. */
interface Shape {
  method: string;
  tool: string | null;
  target: string | null;
  version: string | null;
  state: string;
  errorCode: number | null;
  steps: boolean;
}

/** Shapes kept at once; a call of a new shape beyond them writes the waiting calls first. */
const SHAPES = 8;

export class LaterCalls {
  private readonly rows: Float64Array;
  private readonly shapes: Shape[] = [];
  private count = 0;
  private timer: NodeJS.Timeout | null = null;
  private writing = false;
  /** The facts a row is read back into (the writer reads them before the next row). */
  private readonly facts = emptyFacts();
  private readonly steps = { schemaMs: null as number | null, policyMs: null as number | null };

  /**
   * @param capacity calls that wait at most; the batch is written when they are all there
   * @param delayMs longest a call waits
   * @param write what a call has to say, from its facts (the builder's `ended`)
   */
  constructor(
    private readonly capacity: number,
    private readonly delayMs: number,
    private readonly write: (f: CallFacts) => void,
  ) {
    this.rows = new Float64Array(capacity * ROW);
  }

  /** Keeps the call's facts for the next batch; false, and nothing kept, for a call that does not fit a row. */
  add(call: Call): boolean {
    const rid = call.requestId instanceof RawId ? call.requestId.value : call.requestId;
    const s = call.stderr;
    if (
      typeof rid !== 'number' ||
      call.method === null ||
      call.decision !== null ||
      (call.tracestate ?? null) !== null ||
      call.cancelRequested ||
      call.content !== undefined ||
      (s !== null && (s.seen !== 0 || s.text !== null))
    )
      return false;
    const callId = hexId(call.callId);
    if (callId < 0) return false;
    // The shape first: a new one may write the waiting rows, which moves where this row goes.
    const shape = this.shapeOf(call);
    const at = this.count * ROW;
    const r = this.rows;
    if (!keepTraceparent(call.traceparent, r, at)) return false;
    r[at + STARTED] = call.startedAt;
    r[at + DISPATCHED] = call.dispatchedAt ?? NaN;
    r[at + ENDED] = call.endedAt ?? Date.now();
    r[at + REQUEST_ID] = rid;
    r[at + CALL_ID] = callId;
    r[at + SCHEMA_MS] = call.steps?.schemaMs ?? NaN;
    r[at + POLICY_MS] = call.steps?.policyMs ?? NaN;
    r[at + GENERATION] = call.generation ?? NaN;
    r[at + SHAPE] = shape;
    this.count += 1;
    if (this.count >= this.capacity) this.flush();
    else if (this.timer === null) {
      this.timer = setTimeout(() => this.flush(), this.delayMs);
      this.timer.unref();
    }
    return true;
  }

  /** Writes every waiting call, oldest first. */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.writing) return;
    this.writing = true;
    const r = this.rows;
    const f = this.facts;
    try {
      for (let i = 0; i < this.count; i++) {
        const at = i * ROW;
        const shape = this.shapes[r[at + SHAPE]!]!;
        f.callId = callIdText(r[at + CALL_ID]!);
        f.requestId = r[at + REQUEST_ID]!;
        f.method = shape.method;
        f.tool = shape.tool;
        f.target = shape.target;
        f.state = shape.state;
        f.startedAt = r[at + STARTED]!;
        f.dispatchedAt = orNull(r[at + DISPATCHED]!);
        f.endedAt = r[at + ENDED]!;
        f.protocolVersion = shape.version;
        f.generation = orNull(r[at + GENERATION]!);
        f.errorCode = shape.errorCode;
        f.traceparent = traceparentText(r, at);
        if (shape.steps) {
          this.steps.schemaMs = orNull(r[at + SCHEMA_MS]!);
          this.steps.policyMs = orNull(r[at + POLICY_MS]!);
          f.steps = this.steps;
        } else f.steps = undefined;
        try {
          this.write(f);
        } catch {
          // What one call had to say is lost alone; the calls after it in the batch are still written.
        }
      }
    } finally {
      this.count = 0;
      this.writing = false;
    }
  }

  /** The index of the call's shape: the last one used mostly (calls in a row are alike), a new one when none matches. */
  private shapeOf(call: Call): number {
    const shapes = this.shapes;
    const steps = call.steps !== undefined;
    const errorCode = call.errorCode ?? null;
    const state = call.state ?? 'unknown';
    for (let i = shapes.length - 1; i >= 0; i--) {
      const s = shapes[i]!;
      if (
        s.method === call.method &&
        s.tool === call.tool &&
        s.state === state &&
        s.version === call.protocolVersion &&
        s.errorCode === errorCode &&
        s.steps === steps &&
        s.target === call.target
      )
        return i;
    }
    if (shapes.length >= SHAPES) {
      // The waiting rows name the shapes by index: they are written before the shapes are forgotten.
      this.flush();
      shapes.length = 0;
    }
    shapes.push({ method: call.method!, tool: call.tool, target: call.target, version: call.protocolVersion, state, errorCode, steps });
    return shapes.length - 1;
  }
}

const orNull = (x: number): number | null => (Number.isNaN(x) ? null : x);

/** `c_` and 12 lowercase hex digits (records/ids.ts newCallId) as a number; -1 for any other id. */
function hexId(id: string): number {
  if (id.length !== 14 || id.charCodeAt(0) !== 99 || id.charCodeAt(1) !== 95) return -1;
  const high = hexAt(id, 2, 4);
  const low = hexAt(id, 6, 8);
  return high < 0 || low < 0 ? -1 : high * 4294967296 + low;
}

const HEX = '0123456789abcdef';

/** `digits` lowercase hex digits of `s` from `from` as a number (at most 8: 32 bits); -1 if one is not. */
function hexAt(s: string, from: number, digits: number): number {
  let n = 0;
  for (let i = from; i < from + digits; i++) {
    const c = s.charCodeAt(i);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1;
    if (d < 0) return -1;
    n = n * 16 + d;
  }
  return n;
}

/**
 * The traceparent into the row: none, or one of exactly `vv-32 hex-16 hex-ff`
 * in lowercase, which the row gives back character for character (valid or
 * not: the span's writer judges it then, as it would have now). False for
 * any other text (written at once).
 */
function keepTraceparent(tp: string | null, r: Float64Array, at: number): boolean {
  if (tp === null) {
    r[at + TP_FLAGS] = NaN;
    return true;
  }
  if (tp.length !== 55 || tp.charCodeAt(2) !== 45 || tp.charCodeAt(35) !== 45 || tp.charCodeAt(52) !== 45) return false;
  const version = hexAt(tp, 0, 2);
  const flags = hexAt(tp, 53, 2);
  if (version < 0 || flags < 0) return false;
  for (let k = 0; k < 4; k++) {
    const part = hexAt(tp, 3 + 8 * k, 8);
    if (part < 0) return false;
    r[at + TP_TRACE + k] = part;
  }
  for (let k = 0; k < 2; k++) {
    const part = hexAt(tp, 36 + 8 * k, 8);
    if (part < 0) return false;
    r[at + TP_PARENT + k] = part;
  }
  r[at + TP_FLAGS] = version * 256 + flags;
  return true;
}

const tpCodes = new Array<number>(55).fill(45);

function putHex(n: number, digits: number, into: number[], at: number): void {
  for (let i = at + digits - 1; i >= at; i--) {
    into[i] = HEX.charCodeAt(n % 16);
    n = Math.floor(n / 16);
  }
}

/** The traceparent a row keeps, as the client sent it; null for none. */
function traceparentText(r: Float64Array, at: number): string | null {
  const vf = r[at + TP_FLAGS]!;
  if (Number.isNaN(vf)) return null;
  putHex(Math.floor(vf / 256), 2, tpCodes, 0);
  for (let k = 0; k < 4; k++) putHex(r[at + TP_TRACE + k]!, 8, tpCodes, 3 + 8 * k);
  for (let k = 0; k < 2; k++) putHex(r[at + TP_PARENT + k]!, 8, tpCodes, 36 + 8 * k);
  putHex(vf % 256, 2, tpCodes, 53);
  return String.fromCharCode.apply(null, tpCodes);
}
const codes = [99, 95, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/** The call id a row's number came from. */
function callIdText(n: number): string {
  for (let i = 13; i >= 2; i--) {
    codes[i] = HEX.charCodeAt(n % 16);
    n = Math.floor(n / 16);
  }
  return String.fromCharCode.apply(null, codes);
}

function emptyFacts(): CallFacts {
  return {
    callId: '',
    requestId: null,
    method: null,
    tool: null,
    target: null,
    state: '',
    startedAt: 0,
    dispatchedAt: null,
    endedAt: 0,
    protocolVersion: null,
    traceparent: null,
    tracestate: null,
    decision: null,
    generation: null,
    cancelRequested: false,
    errorCode: null,
    stderr: null,
    content: undefined,
    steps: undefined,
  };
}
