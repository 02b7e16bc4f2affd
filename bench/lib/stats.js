// Order statistics for benchmark samples. Ratios are taken per round (each
// round measures the variant and its baseline back to back) and then the
// median of those ratios is reported, so slow drift of the machine cancels.

/** Median of a list of numbers (mean of the two middle values for even lengths). */
export function median(values) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Nearest-rank quantile (q in [0, 1]) of an already sorted list. */
export function quantileSorted(sorted, q) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** p50 and p99 of a list of numbers. */
export function percentiles(values) {
  const sorted = Float64Array.from(values).sort();
  return { p50: quantileSorted(sorted, 0.5), p99: quantileSorted(sorted, 0.99) };
}

/** Median over rounds of `a[i] / b[i]`: the paired ratio of two interleaved series. */
export function pairedRatio(a, b) {
  const n = Math.min(a.length, b.length);
  const ratios = [];
  for (let i = 0; i < n; i++) ratios.push(a[i] / b[i]);
  return median(ratios);
}

/** Median over rounds of `f(i)`: for derived per-round quantities. */
export function medianOver(rounds, f) {
  const values = [];
  for (let i = 0; i < rounds; i++) values.push(f(i));
  return median(values);
}
