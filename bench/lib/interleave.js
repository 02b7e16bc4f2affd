// The interleaved runner: every variant is measured once per round, the order
// alternating forward and backward (A B C D, D C B A, ...), so that a variant
// and its baseline always run close together in time and neither always goes
// first. Results are kept per round, index-aligned across variants, which is
// what the paired ratios in stats.js need.

/**
 * @param {Array<{name: string}>} variants
 * @param {number} rounds measured rounds
 * @param {(variant: object, round: number) => Promise<unknown>} measure one sample
 * @param {{warmup?: number}} [options] unrecorded rounds first (JIT, page cache)
 * @returns {Promise<Record<string, unknown[]>>} samples per variant name, one per round
 */
export async function interleave(variants, rounds, measure, { warmup = 1 } = {}) {
  const samples = Object.fromEntries(variants.map((v) => [v.name, []]));
  for (let r = -warmup; r < rounds; r++) {
    const order = (r + warmup) % 2 === 0 ? variants : [...variants].reverse();
    for (const variant of order) {
      const sample = await measure(variant, r);
      if (r >= 0) samples[variant.name].push(sample);
    }
  }
  return samples;
}

/** 'round 3/15', or 'warm-up' for the unrecorded rounds. */
export function roundName(r, rounds) {
  return r < 0 ? 'warm-up' : `round ${r + 1}/${rounds}`;
}
