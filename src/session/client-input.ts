/**
 * The client's input: mcpguard's stdin, split into lines for the relay, and
 * paused while a side is full. Its frames wait while the child's stdin (or
 * the queue for a restarting server) is full; a client that stops reading
 * mcpguard's answers is not read from either, since the answers mcpguard
 * writes on its own (rejections, refusals) would otherwise pile up without
 * bound. After the session's shutdown it is never read again.
 */
import type { Readable } from 'node:stream';
import { LineSplitter, type JoinPool, type LineEvent } from '../wire/framing.js';
import { FramePrescan } from '../wire/json-prescan.js';

/** mcpguard's stdin for one session: read in lines, paused for a reason, stopped for good at shutdown. */
export class ClientInput {
  /** Why the input is paused: its frames wait for the child, or mcpguard's answers wait for the client; `done`: for good. */
  private readonly held = { byChild: false, byClient: false, done: false };
  /** Read by the line splitter after every line: while held, the rest of a read waits. */
  private readonly gate = { held: false };
  private lines: LineSplitter | null = null;
  private readonly onData = (chunk: Buffer): void => this.lines!.push(chunk);

  constructor(private readonly input: Readable) {}

  /** Pause (`held`) or resume the input for one reason; it flows only while no reason holds it. */
  hold(why: 'byChild' | 'byClient', held: boolean): void {
    const h = this.held;
    h[why] = held;
    this.gate.held = h.byChild || h.byClient || h.done;
    if (this.gate.held) return void this.input.pause();
    // Lines of an earlier read come before any new read; splitting them may close the gate again.
    if ((this.lines?.resume() ?? true) && !this.gate.held) this.input.resume();
  }

  /** Start reading: each line (or over-long line, or cut-off tail) to `line`; then `ended` at EOF, or `failed` on a read error. */
  read(maxFrameBytes: number, joins: JoinPool, line: (event: LineEvent) => void, ended: () => void, failed: () => void): void {
    const lines = new LineSplitter(maxFrameBytes, line, this.gate, joins, new FramePrescan());
    this.lines = lines;
    this.input.on('data', this.onData);
    this.input.once('end', () => {
      lines.end();
      ended();
    });
    this.input.once('error', failed);
  }

  /** Never read again (the session's shutdown). */
  stop(): void {
    this.input.off('data', this.onData);
    this.hold('byClient', true);
    this.held.done = true;
  }
}
