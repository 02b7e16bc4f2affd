// The pre-scan's WebAssembly string check is compiled by the first large frame
// that needs it, not when a session makes its pre-scans: a session whose
// frames stay small never compiles the module nor holds its memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';

test('a FramePrescan compiles the WebAssembly module at its first frame, not when it is made', async () => {
  // Count compilations from before the module under test is loaded (this file runs in a process of its own).
  const Native = WebAssembly.Module;
  let compiled = 0;
  WebAssembly.Module = function Module(bytes) {
    compiled++;
    return new Native(bytes);
  };
  try {
    const { FramePrescan } = await import('../../dist/wire/json-prescan.js');
    const sides = [new FramePrescan(), new FramePrescan()];
    assert.equal(compiled, 0, 'compiled before any frame needed it');
    const frame = Buffer.from(`{"text":"${'a'.repeat(100_000)}"}`);
    sides[0].advance(frame, frame.length);
    assert.equal(compiled, 1);
    sides[1].advance(frame, frame.length);
    assert.equal(compiled, 1, 'compiled once per process');
  } finally {
    WebAssembly.Module = Native;
  }
});
