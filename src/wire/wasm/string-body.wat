;; The body of a JSON string, checked 32 bytes at a time (WebAssembly SIMD):
;; the same grammar as json-scan.ts's string() loop. Used by json-prescan.ts
;; on large frames while they arrive; the scanner proper still gives every
;; verdict. Compiled into string-body.ts by build-module.mjs (beside this file).
;;
;; body(i, end): bytes [i, end) of memory are a string body from just after
;; its opening quote (or from where an earlier call stopped). Returns
;;   (k << 2) | 0  the closing quote is at k
;;   (k << 2) | 1  all bytes up to k are valid; resume at k with more bytes
;;                 (k = end, or an escape at k that is not whole yet)
;;   2             the string is invalid (a control byte, a bad escape, a
;;                 lone surrogate): the scanner will say which, at the newline
;;
;; controls(i, end): the first byte below 0x20 in [i, end), or end (the
;; scanner's check of a long run it already knows has no quote or backslash).
(module
  (memory (export "memory") 2)

  ;; Tables in the memory's last 512 bytes, above the 64 KiB slice JS copies in.
  ;; What may follow a backslash, by byte (at 0x1ff00): 1 for the simple
  ;; escapes \" \\ \/ \b \f \n \r \t, 2 for \u, 0 (invalid) for anything else.
  (data (i32.const 0x1ff22) "\01")
  (data (i32.const 0x1ff2f) "\01")
  (data (i32.const 0x1ff5c) "\01")
  (data (i32.const 0x1ff62) "\01")
  (data (i32.const 0x1ff66) "\01")
  (data (i32.const 0x1ff6e) "\01")
  (data (i32.const 0x1ff72) "\01")
  (data (i32.const 0x1ff74) "\01\02")
  ;; Hex digit values by byte (at 0x1fe00): 0-15, or 0xff for a byte that is not one.
  (data (i32.const 0x1fe00) "\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\00\01\02\03\04\05\06\07\08\09\ff\ff\ff\ff\ff\ff\ff\0a\0b\0c\0d\0e\0f\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\0a\0b\0c\0d\0e\0f\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff\ff")

  ;; The code unit of the \uXXXX escape whose backslash is at $p, or -1.
  (func $hex4 (param $p i32) (result i32)
    (local $a i32) (local $b i32) (local $c i32) (local $d i32)
    (local.set $a (i32.load8_u offset=0x1fe00 (i32.load8_u offset=2 (local.get $p))))
    (local.set $b (i32.load8_u offset=0x1fe00 (i32.load8_u offset=3 (local.get $p))))
    (local.set $c (i32.load8_u offset=0x1fe00 (i32.load8_u offset=4 (local.get $p))))
    (local.set $d (i32.load8_u offset=0x1fe00 (i32.load8_u offset=5 (local.get $p))))
    (if (i32.and (i32.or (i32.or (local.get $a) (local.get $b)) (i32.or (local.get $c) (local.get $d))) (i32.const 0xf0))
      (then (return (i32.const -1))))
    (i32.or
      (i32.or (i32.shl (local.get $a) (i32.const 12)) (i32.shl (local.get $b) (i32.const 8)))
      (i32.or (i32.shl (local.get $c) (i32.const 4)) (local.get $d))))

  (func (export "controls") (param $i i32) (param $end i32) (result i32)
    (local $m i32)
    (block $tail
      (loop $blocks
        (br_if $tail (i32.gt_u (i32.add (local.get $i) (i32.const 16)) (local.get $end)))
        (local.set $m (i8x16.bitmask
          (i8x16.lt_u (v128.load (local.get $i)) (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20))))
        (if (local.get $m) (then (return (i32.add (local.get $i) (i32.ctz (local.get $m))))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $blocks)))
    (loop $bytes
      (if (i32.ge_u (local.get $i) (local.get $end)) (then (return (local.get $end))))
      (if (i32.lt_u (i32.load8_u (local.get $i)) (i32.const 0x20)) (then (return (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $bytes))
    (unreachable))

  (func (export "body") (param $i i32) (param $end i32) (result i32)
    (local $v v128) (local $w v128) (local $m i32) (local $k i32) (local $c i32) (local $e i32) (local $u i32) (local $skip i32)
    (loop $next
      (block $special
        (block $mask
          ;; Pass plain bytes: 32 at a time, then one at a time near the end.
          (loop $plain
            (if (i32.le_u (i32.add (local.get $i) (i32.const 32)) (local.get $end))
              (then
                (local.set $v (v128.load (local.get $i)))
                (local.set $w (v128.load offset=16 (local.get $i)))
                (local.set $m (i32.or
                  (i8x16.bitmask (v128.or
                    (v128.or
                      (i8x16.eq (local.get $v) (v128.const i8x16 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22))
                      (i8x16.eq (local.get $v) (v128.const i8x16 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c)))
                    (i8x16.lt_u (local.get $v) (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20))))
                  (i32.shl (i8x16.bitmask (v128.or
                    (v128.or
                      (i8x16.eq (local.get $w) (v128.const i8x16 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22))
                      (i8x16.eq (local.get $w) (v128.const i8x16 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c)))
                    (i8x16.lt_u (local.get $w) (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20)))) (i32.const 16))))
                (br_if $mask (local.get $m))
                (local.set $i (i32.add (local.get $i) (i32.const 32)))
                (br $plain)))
            (if (i32.ge_u (local.get $i) (local.get $end))
              (then (return (i32.or (i32.shl (local.get $i) (i32.const 2)) (i32.const 1)))))
            (local.set $c (i32.load8_u (local.get $i)))
            (br_if $special (i32.or (i32.or (i32.eq (local.get $c) (i32.const 0x22)) (i32.eq (local.get $c) (i32.const 0x5c)))
                                    (i32.lt_u (local.get $c) (i32.const 0x20))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $plain)))
        ;; The 32 bytes at $i have special bytes (quote, backslash, control),
        ;; flagged in $m: all are handled from the mask before the next block
        ;; is loaded, so text with an escape every few bytes still costs one
        ;; load per 32 bytes, not one per escape (bench: the echo text, an
        ;; escape every ~13 bytes, 2.2x the one-block-per-escape loop).
        (loop $specials
          (local.set $k (i32.add (local.get $i) (i32.ctz (local.get $m))))
          (local.set $c (i32.load8_u (local.get $k)))
          (if (i32.eq (local.get $c) (i32.const 0x22)) (then (return (i32.shl (local.get $k) (i32.const 2)))))
          (if (i32.lt_u (local.get $c) (i32.const 0x20)) (then (return (i32.const 2))))
          ;; A backslash at $k.
          (if (i32.ge_u (i32.add (local.get $k) (i32.const 1)) (local.get $end))
            (then (return (i32.or (i32.shl (local.get $k) (i32.const 2)) (i32.const 1)))))
          (local.set $c (i32.load8_u offset=0x1ff00 (i32.load8_u offset=1 (local.get $k))))
          (if (i32.ne (local.get $c) (i32.const 1))
            (then
              (if (i32.eqz (local.get $c)) (then (return (i32.const 2))))
              ;; \uXXXX: six bytes; its hex digits are never special bytes.
              (if (i32.gt_u (i32.add (local.get $k) (i32.const 6)) (local.get $end))
                (then (return (i32.or (i32.shl (local.get $k) (i32.const 2)) (i32.const 1)))))
              (local.set $u (call $hex4 (local.get $k)))
              (if (i32.lt_s (local.get $u) (i32.const 0)) (then (return (i32.const 2))))
              ;; A surrogate (a pair or a lone one): the scalar path below.
              (local.set $i (local.get $k))
              (br_if $special (i32.eq (i32.and (local.get $u) (i32.const 0xf800)) (i32.const 0xd800)))
              (local.set $i (i32.add (local.get $k) (i32.const 6)))
              (br $next)))
          ;; A simple escape: both its bytes are done; drop them from the mask.
          (local.set $skip (i32.sub (i32.add (local.get $k) (i32.const 2)) (local.get $i)))
          (if (i32.ge_u (local.get $skip) (i32.const 32))
            (then
              (local.set $i (i32.add (local.get $k) (i32.const 2)))
              (br $next)))
          (local.set $m (i32.and (local.get $m) (i32.shl (i32.const -1) (local.get $skip))))
          (br_if $specials (local.get $m)))
        (local.set $i (i32.add (local.get $i) (i32.const 32)))
        (br $next))
      ;; $i is at a quote, a backslash or a control byte.
      (local.set $c (i32.load8_u (local.get $i)))
      (if (i32.eq (local.get $c) (i32.const 0x22)) (then (return (i32.shl (local.get $i) (i32.const 2)))))
      (if (i32.lt_u (local.get $c) (i32.const 0x20)) (then (return (i32.const 2))))
      (if (i32.ge_u (i32.add (local.get $i) (i32.const 1)) (local.get $end))
        (then (return (i32.or (i32.shl (local.get $i) (i32.const 2)) (i32.const 1)))))
      (local.set $e (i32.load8_u offset=1 (local.get $i)))
      (if (i32.eq (local.get $e) (i32.const 0x75))
        (then
          (if (i32.gt_u (i32.add (local.get $i) (i32.const 6)) (local.get $end))
            (then (return (i32.or (i32.shl (local.get $i) (i32.const 2)) (i32.const 1)))))
          (local.set $u (call $hex4 (local.get $i)))
          (if (i32.lt_s (local.get $u) (i32.const 0)) (then (return (i32.const 2))))
          ;; I-JSON: no lone surrogates
          (if (i32.eq (i32.and (local.get $u) (i32.const 0xfc00)) (i32.const 0xdc00)) (then (return (i32.const 2))))
          (if (i32.eq (i32.and (local.get $u) (i32.const 0xfc00)) (i32.const 0xd800))
            (then
              (if (i32.gt_u (i32.add (local.get $i) (i32.const 12)) (local.get $end))
                (then (return (i32.or (i32.shl (local.get $i) (i32.const 2)) (i32.const 1)))))
              (if (i32.or (i32.ne (i32.load8_u offset=6 (local.get $i)) (i32.const 0x5c))
                          (i32.ne (i32.load8_u offset=7 (local.get $i)) (i32.const 0x75)))
                (then (return (i32.const 2))))
              (local.set $u (call $hex4 (i32.add (local.get $i) (i32.const 6))))
              (if (i32.lt_s (local.get $u) (i32.const 0)) (then (return (i32.const 2))))
              (if (i32.ne (i32.and (local.get $u) (i32.const 0xfc00)) (i32.const 0xdc00)) (then (return (i32.const 2))))
              (local.set $i (i32.add (local.get $i) (i32.const 12)))
              (br $next)))
          (local.set $i (i32.add (local.get $i) (i32.const 6)))
          (br $next)))
      ;; The simple escapes: \" \\ \/ \b \f \n \r \t
      (if (i32.or
            (i32.or (i32.or (i32.eq (local.get $e) (i32.const 0x22)) (i32.eq (local.get $e) (i32.const 0x5c)))
                    (i32.or (i32.eq (local.get $e) (i32.const 0x2f)) (i32.eq (local.get $e) (i32.const 0x62))))
            (i32.or (i32.or (i32.eq (local.get $e) (i32.const 0x66)) (i32.eq (local.get $e) (i32.const 0x6e)))
                    (i32.or (i32.eq (local.get $e) (i32.const 0x72)) (i32.eq (local.get $e) (i32.const 0x74)))))
        (then
          (local.set $i (i32.add (local.get $i) (i32.const 2)))
          (br $next)))
      (return (i32.const 2)))
    (unreachable))
)
