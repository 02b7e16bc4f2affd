// The one table: a Markdown table (readable in a terminal, pastes into the
// README). Each line is one measured quantity of one variant.

/** A table line. `ok` is true/false when there is a target, else null. */
export function line(row, variant, value, ratio = '', target = '', ok = null) {
  return { row, variant, value, ratio, target, ok };
}

/** Format a number with a sensible number of digits. */
export function num(value, digits = null) {
  if (!Number.isFinite(value)) return 'n/a';
  if (digits !== null) return value.toFixed(digits);
  const abs = Math.abs(value);
  return value.toFixed(abs >= 100 ? 0 : abs >= 10 ? 1 : 2);
}

export function ratioText(value, baseline) {
  return Number.isFinite(value) ? `${value.toFixed(2)}× ${baseline}` : 'n/a';
}

export function mark(ok) {
  return ok === null ? '' : ok ? ' ✓' : ' ✗';
}

export function render(lines) {
  const header = ['row', 'variant', 'median', 'ratio', 'target'];
  const cells = lines.map((l) => [l.row, l.variant, l.value, l.ratio, l.target === '' ? '' : `${l.target}${mark(l.ok)}`]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => [...c[i]].length)));
  const pad = (text, i) => text + ' '.repeat(widths[i] - [...text].length);
  const row = (c) => `| ${c.map(pad).join(' | ')} |`;
  return [row(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(row)].join('\n');
}
