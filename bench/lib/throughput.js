// Throughput of large frames: 1 MiB tool results, a few requests in flight at
// once (a window), timed from the first write to the last response's last byte.
import { interleave, roundName } from './interleave.js';
import { launch, stop } from './proc.js';
import { Peer, requestFrame } from './rpc.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { relayVariants } from './variants.js';

export const FRAME_BYTES = 1024 * 1024;

/** MiB/s of `frames` responses of ~`size` bytes through `argv`, `window` requests in flight. */
export async function largeFrames(argv, { frames, window, size = FRAME_BYTES }) {
  const child = launch(argv);
  try {
    const peer = new Peer(child);
    await peer.initialize();
    const params = { name: 'echo', arguments: { size } };
    for (let i = 0; i < 2; i++) await peer.call('tools/call', params); // warm the server's cache
    let sent = 0;
    let bytes = 0;
    const t0 = process.hrtime.bigint();
    let last = t0;
    const worker = async () => {
      while (sent < frames) {
        sent++;
        const id = peer.reserveId();
        const response = await peer.send(id, requestFrame(id, 'tools/call', params));
        bytes += response.bytes;
        if (response.at > last) last = response.at;
      }
    };
    await Promise.all(Array.from({ length: window }, worker));
    return { mibps: bytes / 2 ** 20 / (Number(last - t0) / 1e9), frameBytes: bytes / frames };
  } finally {
    await stop(child);
  }
}

export async function throughputRows({ rounds, frames, window, warmupRounds = 1 }, progress) {
  const variants = relayVariants();
  let frameBytes = 0;
  const samples = await interleave(
    variants,
    rounds,
    async (v, r) => {
      progress(`throughput ${v.name} ${roundName(r, rounds)}`);
      const result = await largeFrames(v.argv, { frames, window });
      frameBytes = result.frameBytes;
      return result.mibps;
    },
    { warmup: warmupRounds },
  );
  const row = `throughput (MiB/s), ${frames} × 1 MiB results, ${window} in flight, × ${rounds} rounds`;
  const lines = variants.map((v) => {
    const vsCopy = pairedRatio(samples[v.name], samples.copy);
    if (v.name === 'copy') return line(row, v.label, num(median(samples.copy)), 'baseline');
    if (v.name === 'mcpguard') return line(row, v.label, num(median(samples[v.name])), ratioText(vsCopy, 'copy'), '≥ 0.6× copy', vsCopy >= 0.6);
    return line(row, v.label, num(median(samples[v.name])), ratioText(vsCopy, 'copy'));
  });
  return { lines, notes: [`large frame: ${Math.round(frameBytes)} bytes per response line (JSON with escapes and multibyte text)`] };
}
