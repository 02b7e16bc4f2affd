;; The body of a JSON string, checked 16 bytes at a time (WebAssembly SIMD):
;; the same grammar as json-scan.ts's string() loop. Used by json-prescan.ts
;; on large frames while they arrive; the scanner proper still gives every
;; verdict. Compiled into string-body-wasm.ts (see the comment there).
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

  (func $hex (param $c i32) (result i32)
    (if (i32.lt_u (i32.sub (local.get $c) (i32.const 0x30)) (i32.const 10))
      (then (return (i32.sub (local.get $c) (i32.const 0x30)))))
    ;; 'A'-'F' and 'a'-'f' (and nothing else) land in 'a'-'f' with bit 5 set
    (local.set $c (i32.or (local.get $c) (i32.const 0x20)))
    (if (i32.lt_u (i32.sub (local.get $c) (i32.const 0x61)) (i32.const 6))
      (then (return (i32.sub (local.get $c) (i32.const 0x57)))))
    (i32.const -1))

  ;; The code unit of the \uXXXX escape whose backslash is at $p, or -1.
  (func $hex4 (param $p i32) (result i32)
    (local $a i32) (local $b i32) (local $c i32) (local $d i32)
    (local.set $a (call $hex (i32.load8_u offset=2 (local.get $p))))
    (local.set $b (call $hex (i32.load8_u offset=3 (local.get $p))))
    (local.set $c (call $hex (i32.load8_u offset=4 (local.get $p))))
    (local.set $d (call $hex (i32.load8_u offset=5 (local.get $p))))
    (if (i32.lt_s (i32.or (i32.or (local.get $a) (local.get $b)) (i32.or (local.get $c) (local.get $d))) (i32.const 0))
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
    (local $v v128) (local $m i32) (local $c i32) (local $e i32) (local $u i32)
    (loop $next
      ;; Pass plain bytes: 16 at a time, then one at a time near the end.
      (block $special
        (loop $plain
          (if (i32.le_u (i32.add (local.get $i) (i32.const 16)) (local.get $end))
            (then
              (local.set $v (v128.load (local.get $i)))
              (local.set $m (i8x16.bitmask
                (v128.or
                  (v128.or
                    (i8x16.eq (local.get $v) (v128.const i8x16 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22 0x22))
                    (i8x16.eq (local.get $v) (v128.const i8x16 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c 0x5c)))
                  (i8x16.lt_u (local.get $v) (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20)))))
              (if (local.get $m)
                (then
                  (local.set $i (i32.add (local.get $i) (i32.ctz (local.get $m))))
                  (br $special)))
              (local.set $i (i32.add (local.get $i) (i32.const 16)))
              (br $plain)))
          (if (i32.ge_u (local.get $i) (local.get $end))
            (then (return (i32.or (i32.shl (local.get $i) (i32.const 2)) (i32.const 1)))))
          (local.set $c (i32.load8_u (local.get $i)))
          (br_if $special (i32.or (i32.or (i32.eq (local.get $c) (i32.const 0x22)) (i32.eq (local.get $c) (i32.const 0x5c)))
                                  (i32.lt_u (local.get $c) (i32.const 0x20))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $plain)))
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
