/**
 * The string-body check of string-body.wat (beside this file), compiled.
 * Regenerate after editing the .wat: `npx wabt`'s wat2wasm with SIMD on
 * (`wat2wasm --enable-simd string-body.wat`), then base64 of the output
 * here. The module is 16 bytes at a time through WebAssembly SIMD: 4-14× the
 * byte loop in JavaScript on long strings, and still ahead on text with an
 * escape every few bytes.
 */
const MODULE = 'AGFzbQEAAAABDAJgAX8Bf2ACf38BfwMFBAAAAQEFAwEAAgccAwZtZW1vcnkCAAhjb250cm9scwACBGJvZHkAAwrfBQQvACAAQTBrQQpJBEAgAEEwaw8LIABBIHIhACAAQeEAa0EGSQRAIABB1wBrDwtBfwtQAQR/IAAtAAIQACEBIAAtAAMQACECIAAtAAQQACEDIAAtAAUQACEEIAEgAnIgAyAEcnJBAEgEQEF/DwsgAUEMdCACQQh0ciADQQR0IARycgttAQF/AkADQCAAQRBqIAFLDQEgAP0ABAD9DCAgICAgICAgICAgICAgICD9Jv1kIQIgAgRAIAAgAmhqDwsgAEEQaiEADAALCwNAIAAgAU8EQCABDwsgAC0AAEEgSQRAIAAPCyAAQQFqIQAMAAsAC+0DAgF7BH8DQAJAA0AgAEEQaiABTQRAIAD9AAQAIQIgAv0MIiIiIiIiIiIiIiIiIiIiIv0jIAL9DFxcXFxcXFxcXFxcXFxcXFz9I/1QIAL9DCAgICAgICAgICAgICAgICD9Jv1Q/WQhAyADBEAgACADaGohAAwDCyAAQRBqIQAMAQsgACABTwRAIABBAnRBAXIPCyAALQAAIQQgBEEiRiAEQdwARnIgBEEgSXINASAAQQFqIQAMAAsLIAAtAAAhBCAEQSJGBEAgAEECdA8LIARBIEkEQEECDwsgAEEBaiABTwRAIABBAnRBAXIPCyAALQABIQUgBUH1AEYEQCAAQQZqIAFLBEAgAEECdEEBcg8LIAAQASEGIAZBAEgEQEECDwsgBkGA+ANxQYC4A0YEQEECDwsgBkGA+ANxQYCwA0YEQCAAQQxqIAFLBEAgAEECdEEBcg8LIAAtAAZB3ABHIAAtAAdB9QBHcgRAQQIPCyAAQQZqEAEhBiAGQQBIBEBBAg8LIAZBgPgDcUGAuANHBEBBAg8LIABBDGohAAwCCyAAQQZqIQAMAQsgBUEiRiAFQdwARnIgBUEvRiAFQeIARnJyIAVB5gBGIAVB7gBGciAFQfIARiAFQfQARnJycgRAIABBAmohAAwBC0ECDwsACw==';

/** Bytes copied into the module's memory per call (its memory is 128 KiB). */
const SLICE_BYTES = 64 * 1024;

/** What `check` returns for a string that can never be valid. */
export const INVALID_STRING = 0;

/**
 * Checks string bodies as they arrive. `check(view, at, end)`: `view[at, end)`
 * continues a string body (`at` just past its opening quote or where the last
 * call stopped). Returns the offset past the closing quote, `-(k + 1)` when
 * the bytes up to `k` are valid and the rest has not arrived (`k` is where to
 * go on from), or INVALID_STRING.
 */
export interface StringBodyCheck {
  check(view: Buffer, at: number, end: number): number;
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
      check(view: Buffer, at: number, end: number): number {
        for (;;) {
          const stop = at + SLICE_BYTES < end ? at + SLICE_BYTES : end;
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
