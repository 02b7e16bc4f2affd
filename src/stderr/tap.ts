/**
 * The child's stderr, end to end: counted raw, redacted, then retained per
 * call and per process and mirrored to a human within budget. The session
 * feeds it every chunk with the calls in flight (never pausing the pipe), so a
 * call's ring opens with its first stderr byte, and most calls, which see none,
 * cost nothing here; the relay's observers tell it when calls end, so each
 * call's record carries its own counts and an error answer can carry its excerpt.
 */
import type { Call } from '../mcp/call.js';
import type { SessionObserver } from '../relay/observer.js';
import { StderrStore, type CallStderr } from './budget.js';
import { CAPTURED_LABEL, omission, renderExcerpt, renderExcerptShown } from './excerpt.js';
import { Passthrough } from './passthrough.js';
import { Redactor } from '../mask/redact.js';
import type { RetainMode } from './ring.js';
import type { TailStretch } from './stretches.js';

export interface StderrOptions {
  callBytes: number;
  processBytes: number;
  excerptBytes: number;
  retain: RetainMode;
  /** Mirror budget in bytes, or null for no mirror. */
  passthroughBytes: number | null;
}

/** What the session record says about stderr. */
export interface StderrSummary {
  bytes_seen: number;
  /** Retained now: the session ring (calls' bytes went into their own records as they ended). */
  bytes_retained: number;
  /** Some byte is in no record: a call's ring or the session ring gave bytes up. */
  truncated: boolean;
  /** Bytes that arrived with no call in flight: the stream `tail` is the end of. */
  tail_bytes_seen: number;
  /** `tail` starts (after its label) with mcpguard's truncation marker; a line the child wrote that looks like one is not it. */
  tail_truncated: boolean;
  redactions: number;
  mirrored_bytes: number;
  suppressed_bytes: number;
  /** The session ring (bytes outside any call), rendered with its marker. */
  tail: string;
  /**
   * Where `tail`'s text (after its label and marker) came in the session's
   * stderr stream, in text order: `{start, end, bytes}` per stretch between
   * calls (`merged`: its bytes lie within [start, end), calls' stderr between
   * them), and in head+tail retention `{omitted, bytes}` for the omission
   * line. Absent when there is no tail; null when the text is not exactly the
   * bytes kept (invalid UTF-8). stretches.ts.
   */
  tail_stretches?: TailStretch[] | null;
}

const QUIET = Object.freeze({ seen: 0, retained: 0, truncated: false, shared: false, evicted: 0, end: null, text: null });

export class StderrTap implements SessionObserver {
  private readonly redactor: Redactor;
  private readonly store: StderrStore;
  private readonly mirror: Passthrough | null;
  private seen = 0;
  private callsTruncated = false;
  private inFlight: readonly string[] = [];
  private readonly emit = (safe: Buffer): void => {
    this.store.write(safe, this.inFlight);
    this.mirror?.write(safe);
  };

  constructor(
    private readonly options: StderrOptions,
    env: Record<string, string | undefined>,
    mirrorWrite: (bytes: Buffer) => boolean,
    /** Called once, when the mirror first reaches its cap (with the cap in bytes). */
    onMirrorCap?: (limitBytes: number) => void,
  ) {
    this.redactor = new Redactor({ env });
    this.store = new StderrStore({ callBytes: options.callBytes, processBytes: options.processBytes, retain: options.retain });
    this.mirror =
      options.passthroughBytes === null ? null : new Passthrough({ limitBytes: options.passthroughBytes, write: mirrorWrite, onCapReached: onMirrorCap });
  }

  /** A raw chunk from the child's stderr and the calls in flight when it arrived. */
  write(chunk: Buffer, inFlight: readonly string[]): void {
    this.seen += chunk.length; // exact, before anything is decoded or masked
    this.inFlight = inFlight;
    this.redactor.feed(chunk, this.emit);
  }

  /** The stream ended (or was cut): release what the redactor held back. */
  end(): void {
    this.inFlight = [];
    this.emit(this.redactor.flush());
  }

  /** The mirror's destination drained: mirror again. */
  resumeMirror(): void {
    this.mirror?.resume();
  }

  /**
   * The call's counts and its retained text for its final record: the whole
   * ring (already masked and bounded by --stderr-call-bytes), with the same
   * truncation marker as an excerpt but no label. Then its bytes are freed.
   */
  callEnded(call: Call): void {
    const counts = this.store.closeCall(call.callId);
    if (counts.truncated) this.callsTruncated = true;
    const snapshot = counts.seen === 0 ? undefined : this.store.callSnapshot(call.callId);
    // Most calls see no stderr: they share one frozen record of that.
    call.stderr = snapshot === undefined ? QUIET : { ...counts, text: renderExcerpt(snapshot, { maxBytes: Infinity, label: false }) };
    this.store.releaseCall(call.callId);
  }

  /** A call's retained stderr so far, as labelled, marked text within the excerpt budget. */
  excerpt(call: Call): string | null {
    const snapshot = this.store.callSnapshot(call.callId);
    if (snapshot === undefined || snapshot.seen === 0) return null;
    return renderExcerpt(snapshot, { maxBytes: this.options.excerptBytes, label: true });
  }

  /** The mirror's closing line ("suppressed N bytes ..."), if it suppressed anything. */
  mirrorSummary(): string | null {
    return this.mirror?.summary() ?? null;
  }

  summary(): StderrSummary {
    const session = this.store.sessionSnapshot();
    const shown = session.seen === 0 ? null : renderExcerptShown(session, { maxBytes: this.options.callBytes + 256, label: true });
    const tail = shown?.text ?? '';
    // Marked when the ring lost bytes, or when the text had to be cut to fit (invalid bytes grow as U+FFFD).
    const tailTruncated = session.seen > 0 && tail !== `${CAPTURED_LABEL}\n${Buffer.concat([session.head, session.tail]).toString('utf8')}`;
    return {
      bytes_seen: this.seen,
      bytes_retained: this.store.retained,
      truncated: this.callsTruncated || tailTruncated || this.store.inFlightTruncated(),
      tail_bytes_seen: session.seen,
      redactions: this.redactor.count,
      mirrored_bytes: this.mirror?.mirrored ?? 0,
      suppressed_bytes: this.mirror?.suppressed ?? 0,
      tail,
      tail_truncated: tailTruncated,
      ...(shown === null
        ? {}
        : {
            tail_stretches: this.store.sessionStretches.shown({
              ...shown,
              omissionText: Buffer.byteLength(omission(session.mode, shown.head.toString('utf8'), shown.omitted)),
            }),
          }),
    };
  }
}

export type { CallStderr };
