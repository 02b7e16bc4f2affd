/**
 * Output that is never lost: the views write through this, in chunks, waiting
 * for a slow reader (a pipe's buffer is small, and a view of 200,000 rows must
 * not pile up in memory behind it), and the command returns only once the last
 * byte has been handed to the reader. A reader that goes away (`| head -1`:
 * EPIPE) ends the output quietly; the producer sees `closed` and stops.
 */

/** Something text can be written to: a stream (process.stdout) or, in tests, a plain object. */
export interface Sink {
  write(text: string, done?: (error?: Error | null) => void): unknown;
}

interface StreamSink extends Sink {
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  writableLength: number;
  destroyed: boolean;
}

function isStream(sink: Sink): sink is StreamSink {
  const s = sink as Partial<StreamSink>;
  return typeof s.on === 'function' && typeof s.off === 'function' && typeof s.writableLength === 'number';
}

const CHUNK = 64 * 1024;

/** A buffered writer with backpressure over one Sink. */
export class Output {
  /** The reader went away or writing failed: nothing more is written. */
  closed = false;
  /** Why writing failed, other than the reader going away (EPIPE). */
  failure: Error | null = null;
  private parts: string[] = [];
  private size = 0;
  private readonly stream: StreamSink | null;
  private wake: (() => void) | null = null;

  constructor(private readonly sink: Sink) {
    this.stream = isStream(sink) ? sink : null;
    this.stream?.on('error', this.onError);
    this.stream?.on('drain', this.onWake);
    this.stream?.on('close', this.onClose);
  }

  /** Queue `text`; true when enough is queued that the caller should `await flush()` before making more. */
  write(text: string): boolean {
    if (this.closed) return false;
    this.parts.push(text);
    this.size += text.length;
    return this.size >= CHUNK;
  }

  /**
   * Hand what is queued to the sink and wait until the sink has taken it (its
   * write callback), or the reader is gone. One chunk at a time is in flight:
   * waiting for the callback, not only for `drain`, matters when stdout is a
   * file or a terminal, where Node writes synchronously and calls back on the
   * next tick. A view that never waited for those ticks would run to its end
   * inside one microtask chain, and every callback queued meanwhile would keep
   * its chunk's text alive until then (the 200,000-row `activity --json` into
   * a file peaked at ~190 MB that way).
   */
  async flush(): Promise<void> {
    if (this.closed || this.parts.length === 0) return;
    const text = this.parts.join('');
    this.parts = [];
    this.size = 0;
    if (this.stream === null) this.sink.write(text);
    else await this.send(text);
  }

  /** Write and end: every byte handed to the sink (or the reader gone). Then stop listening. */
  async end(): Promise<void> {
    await this.flush();
    this.stream?.off('drain', this.onWake);
    this.stream?.off('close', this.onClose);
    this.stream?.off('error', this.onError);
  }

  // Its own function, so that the callback's closure holds a flag, not the text.
  private async send(text: string): Promise<void> {
    let taken = false;
    this.stream!.write(text, () => {
      taken = true;
      this.onWake();
    });
    while (!taken && !this.closed)
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
  }

  private readonly onWake = (): void => {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  };

  private readonly onClose = (): void => {
    this.closed = true;
    this.onWake();
  };

  private readonly onError = (error: NodeJS.ErrnoException): void => {
    if (error.code !== 'EPIPE' && this.failure === null && !this.closed) this.failure = error;
    this.onClose();
  };
}

/** Wait until a stream sink (process.stderr) has handed what it holds to its reader, or is closed; a plain sink has nothing to wait for. */
export async function settle(sink: Sink): Promise<void> {
  if (!isStream(sink) || sink.writableLength === 0 || sink.destroyed) return;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      sink.off('close', done);
      sink.off('error', done);
      resolve();
    };
    sink.on('close', done);
    sink.on('error', done);
    // Writes are taken in order: the callback of an empty one comes once everything before it is out.
    sink.write('', done);
  });
}
