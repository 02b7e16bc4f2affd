/**
 * The string-body check of string-body.wat (beside this file), compiled.
 * Regenerate after editing the .wat: `node src/wire/wasm/build-module.mjs` (wabt,
 * a pinned devDependency; test/wire/string-body.test.js fails while this copy is
 * stale). The module is 32 bytes at a time through WebAssembly SIMD: 4-14×
 * the byte loop in JavaScript on long strings, and still ahead on text with
 * an escape every few bytes.
 */
const MODULE =
  'AGFzbQEAAAABDAJgAX8Bf2ACf38BfwMEAwABAQUDAQACBxwDBm1lbW9yeQIACGNvbnRyb2xzAAEEYm9keQACCtYHA10BBH8gAC0AAi0AgPwHIQEgAC0AAy0AgPwHIQIgAC0ABC0AgPwHIQMgAC0ABS0AgPwHIQQgASACciADIARyckHwAXEEQEF/DwsgAUEMdCACQQh0ciADQQR0IARycgttAQF/AkADQCAAQRBqIAFLDQEgAP0ABAD9DCAgICAgICAgICAgICAgICD9Jv1kIQIgAgRAIAAgAmhqDwsgAEEQaiEADAALCwNAIAAgAU8EQCABDwsgAC0AAEEgSQRAIAAPCyAAQQFqIQAMAAsAC4cGAgJ7Bn8DQAJAAkADQCAAQSBqIAFNBEAgAP0ABAAhAiAA/QAEECEDIAL9DCIiIiIiIiIiIiIiIiIiIiL9IyAC/QxcXFxcXFxcXFxcXFxcXFxc/SP9UCAC/QwgICAgICAgICAgICAgICAg/Sb9UP1kIAP9DCIiIiIiIiIiIiIiIiIiIiL9IyAD/QxcXFxcXFxcXFxcXFxcXFxc/SP9UCAD/QwgICAgICAgICAgICAgICAg/Sb9UP1kQRB0ciEEIAQNAiAAQSBqIQAMAQsgACABTwRAIABBAnRBAXIPCyAALQAAIQYgBkEiRiAGQdwARnIgBkEgSXINAiAAQQFqIQAMAAsLA0AgACAEaGohBSAFLQAAIQYgBkEiRgRAIAVBAnQPCyAGQSBJBEBBAg8LIAVBAWogAU8EQCAFQQJ0QQFyDwsgBS0AAS0AgP4HIQYgBkEBRwRAIAZFBEBBAg8LIAVBBmogAUsEQCAFQQJ0QQFyDwsgBRAAIQggCEEASARAQQIPCyAFIQAgCEGA8ANxQYCwA0YNAiAFQQZqIQAMAwsgBUECaiAAayEJIAlBIE8EQCAFQQJqIQAMAwsgBEF/IAl0cSEEIAQNAAsgAEEgaiEADAELIAAtAAAhBiAGQSJGBEAgAEECdA8LIAZBIEkEQEECDwsgAEEBaiABTwRAIABBAnRBAXIPCyAALQABIQcgB0H1AEYEQCAAQQZqIAFLBEAgAEECdEEBcg8LIAAQACEIIAhBAEgEQEECDwsgCEGA+ANxQYC4A0YEQEECDwsgCEGA+ANxQYCwA0YEQCAAQQxqIAFLBEAgAEECdEEBcg8LIAAtAAZB3ABHIAAtAAdB9QBHcgRAQQIPCyAAQQZqEAAhCCAIQQBIBEBBAg8LIAhBgPgDcUGAuANHBEBBAg8LIABBDGohAAwCCyAAQQZqIQAMAQsgB0EiRiAHQdwARnIgB0EvRiAHQeIARnJyIAdB5gBGIAdB7gBGciAHQfIARiAHQfQARnJycgRAIABBAmohAAwBC0ECDwsACwvKAgkAQaL+BwsBAQBBr/4HCwEBAEHc/gcLAQEAQeL+BwsBAQBB5v4HCwEBAEHu/gcLAQEAQfL+BwsBAQBB9P4HCwIBAgBBgPwHC4AC////////////////////////////////////////////////////////////////AAECAwQFBgcICf////////8KCwwNDg///////////////////////////////////woLDA0OD////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////////w==';

/** Bytes copied into the module's memory per call at most (its memory is 128 KiB). */
const SLICE_BYTES = 64 * 1024;
/**
 * Bytes copied for the first call on a string not known to be long. Most
 * strings are short (keys, small values): copying a whole slice for each cost
 * a frame of many small keys 64 KiB of copying per string (~6 ms per MiB
 * before the pre-scan gave up). Slices then double up to SLICE_BYTES.
 */
const FIRST_SLICE_BYTES = 256;

/** The first copy's size for a string of which `sofar` bytes came before. */
function firstSlice(sofar: number): number {
  return sofar < FIRST_SLICE_BYTES ? FIRST_SLICE_BYTES : sofar < SLICE_BYTES ? sofar : SLICE_BYTES;
}

/** The next copy's size after one of `slice` bytes. */
function nextSlice(slice: number): number {
  return slice * 2 < SLICE_BYTES ? slice * 2 : SLICE_BYTES;
}

/**
 * Where `check` ends its copies, as offsets from `at`, below `upTo`, when no
 * escape straddles an edge (for tests: the edges worth putting escapes across).
 */
export function sliceEdges(sofar: number, upTo: number): number[] {
  const edges: number[] = [];
  for (let edge = 0, slice = firstSlice(sofar); (edge += slice) < upTo; slice = nextSlice(slice)) edges.push(edge);
  return edges;
}

/** What `check` returns for a string that can never be valid. */
export const INVALID_STRING = 0;

/**
 * Checks string bodies as they arrive. `check(view, at, end, sofar)`:
 * `view[at, end)` continues a string body (`at` just past its opening quote
 * or where the last call stopped; `sofar` bytes of the string came before
 * `at`, which sizes the first copy). Returns the offset past the closing
 * quote, `-(k + 1)` when the bytes up to `k` are valid and the rest has not
 * arrived (`k` is where to go on from), or INVALID_STRING.
 */
export interface StringBodyCheck {
  check(view: Buffer, at: number, end: number, sofar?: number): number;
  /** The first byte below 0x20 in `buf[at, end)`, or `end`. */
  firstControl(buf: Buffer, at: number, end: number): number;
}

/** What is used of the WebAssembly global (the project's type libraries do not declare it). */
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
};

let compiled: StringBodyCheck | null | undefined;

/** The compiled check, or null where WebAssembly (with SIMD) is not available. Compiled on first use. */
export function stringBodyCheck(): StringBodyCheck | null {
  if (compiled !== undefined) return compiled;
  compiled = null;
  try {
    const instance = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(MODULE, 'base64')));
    const body = instance.exports.body as (i: number, end: number) => number;
    const controls = instance.exports.controls as (i: number, end: number) => number;
    const scratch = new Uint8Array((instance.exports.memory as { buffer: ArrayBuffer }).buffer);
    compiled = {
      check(view: Buffer, at: number, end: number, sofar = 0): number {
        for (let slice = firstSlice(sofar); ; slice = nextSlice(slice)) {
          const stop = at + slice < end ? at + slice : end;
          scratch.set(view.subarray(at, stop), 0);
          const result = body(0, stop - at);
          if (result === 2) return INVALID_STRING;
          const k = at + (result >>> 2);
          if ((result & 3) === 0) return k + 1;
          if (stop === end) return -(k + 1);
          // The slice ended first (perhaps inside an escape): go on from where it stopped.
          at = k;
        }
      },
      firstControl(buf: Buffer, at: number, end: number): number {
        while (at < end) {
          const stop = at + SLICE_BYTES < end ? at + SLICE_BYTES : end;
          scratch.set(buf.subarray(at, stop), 0);
          const k = controls(0, stop - at);
          if (k < stop - at) return at + k;
          at = stop;
        }
        return end;
      },
    };
  } catch {
    // No WebAssembly (--jitless) or no SIMD: the scanner's string loop does the work.
  }
  return compiled;
}
