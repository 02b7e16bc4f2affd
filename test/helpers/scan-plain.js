// A ScanResult as plain data (members as entry lists, in source order), so
// that deepEqual can compare the scanner's answers with the reference's.
export function plain(result) {
  const node = (n) => ({
    type: n.type,
    start: n.start,
    end: n.end,
    members: n.members === undefined ? undefined : [...n.members].map(([k, v]) => [k, node(v)]),
    items: n.items?.map(node),
  });
  return result.ok ? { ok: true, value: node(result.value) } : result;
}
