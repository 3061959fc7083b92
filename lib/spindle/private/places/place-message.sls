#!chezscheme
;;; Place messages: which values may travel, and their encoding.
;;;
;;; A message travels as fasl bytes plus a list of descriptors.  Values that
;;; fasl cannot carry faithfully are replaced, in a copy, by wire-ref
;;; records: place channels and shared vectors (by descriptor) and
;;; hashtables (eq hashing depends on addresses; rebuilt in the receiver).
;;; fasl keeps sharing, cycles, gensym identity and nongenerative record
;;; types.  The receiver makes strings, bytevectors and vectors immutable in
;;; place, and replaces mutable boxes by immutable ones.  A rebuilt object
;;; (box, hashtable, record with wire-refs) is made, and remembered, before
;;; its pair and vector parts are decoded in place, so cycles through it
;;; are kept.
(library (spindle private places place-message)
  (export place-message-allowed? encode-message decode-message)
  (import (chezscheme) (spindle private places shared-vector)
          (only (spindle private host objects) bytevector-set-immutable! string-set-immutable! vector-set-immutable!
                immutable-box-fill!)
          (only (spindle private os processes) stack-limit))

  (define-record-type wire-ref
    (fields kind a (mutable b) (mutable c))
    (nongenerative spindle-wire-ref-v1) (sealed #t))

  (define (scalar? v)
    (or (number? v) (char? v) (boolean? v) (null? v) (symbol? v)
        (eq? v (void))))

  (define (hashtable-kind h)
    (and (not (hashtable-weak? h)) (not (hashtable-ephemeron? h))
         (let ([eqv (hashtable-equivalence-function h)] [hash (hashtable-hash-function h)])
           (cond
             [(and (eq? eqv eq?) (not hash)) 'eq]
             [(and (eq? eqv eqv?) (not hash)) 'eqv]
             [(and (eq? eqv equal?) (eq? hash equal-hash)) 'equal]
             [(and (eq? eqv string=?) (eq? hash string-hash)) 'string]
             [(and (eq? eqv eq?) (eq? hash symbol-hash)) 'symbol]
             [else #f]))))

  (define (make-kind-hashtable kind)
    (case kind
      [(eq) (make-eq-hashtable)]
      [(eqv) (make-eqv-hashtable)]
      [(equal) (make-hashtable equal-hash equal?)]
      [(string) (make-hashtable string-hash string=?)]
      [else (make-hashtable symbol-hash eq?)]))

  ;; spindle's own record types (evts, channels, ...) are nongenerative but
  ;; are not data; neither are ftype pointers.
  (define (allowed-record-type? rtd)
    (and (not (record-type-generative? rtd))
         (not (spindle-type? rtd))
         (let loop ([rtd rtd])
           (or (not rtd)
               (and (let ([n (vector-length (record-type-field-names rtd))])
                      (let fields ([i 0])
                        (or (fx= i n)
                            (and (not (record-field-mutable? rtd i)) (fields (fx+ i 1))))))
                    (loop (record-type-parent rtd)))))))

  (define (spindle-type? rtd)
    (let ([uid (symbol->string (record-type-uid rtd))])
      (and (fx>= (string-length uid) 8) (string=? (substring uid 0 8) "spindle-"))))

  (define (record-fields r)
    (let loop ([rtd (record-rtd r)] [acc '()])
      (if (not rtd)
          acc
          (loop (record-type-parent rtd)
                (append (let ([n (vector-length (record-type-field-names rtd))])
                          (let f ([i 0])
                            (if (fx= i n) '()
                                (cons ((record-accessor rtd i) r) (f (fx+ i 1))))))
                        acc)))))

  ;; How deeply a message may nest.  The receiver's fasl-read recurses in
  ;; C once per level of nesting (a list's elements are read in a loop, so
  ;; a long list is one level): about 160 bytes of C stack each, so a list
  ;; nested ~52,000 deep overflows a thread's 8 MB stack and kills the
  ;; receiving process.  Half of that, from this process's stack limit
  ;; (threads get RLIMIT_STACK, or 2 MB when it is unlimited; places and
  ;; the processes that receive from them share it): 26,214 levels with
  ;; the usual 8 MB.  Deeper messages are refused at the put.
  (define message-depth-limit
    (let ([cur (stack-limit)])
      (fxquotient (if (or (not cur) (< cur 65536)) (* 2 1024 1024) (min cur (expt 2 30)))
                  320)))

  ;; Walks v once.  Returns #f if something is not allowed, 'too-deep if it
  ;; nests deeper than message-depth-limit, 'plain if fasl can carry v as
  ;; it is, or 'convert if a copy with wire-refs is needed.  channel?:
  ;; recognises place channels (and places).  Depth counts as fasl nests:
  ;; each element of a pair, vector, box or record one level down, except
  ;; a pair's cdr that is a pair (a list); a hashtable's entries two.
  (define (classify v channel?)
    (let ([seen (make-eq-hashtable)] [convert? #f] [too-deep? #f])
      (define (walk v d)
        (cond
          [(scalar? v) #t]
          [(or (string? v) (bytevector? v)) #t]
          [(hashtable-contains? seen v) #t]
          [(fx> d message-depth-limit) (set! too-deep? #t) #f]
          [else
           (hashtable-set! seen v #t)
           (let ([d (fx+ d 1)])
             (cond
               [(pair? v) (and (walk (car v) d) (walk (cdr v) (if (pair? (cdr v)) (fx- d 1) d)))]
               [(vector? v)
                (let ([n (vector-length v)])
                  (let loop ([i 0]) (or (fx= i n) (and (walk (vector-ref v i) d) (loop (fx+ i 1))))))]
               [(box? v) (walk (unbox v) d)]
               [(channel? v) (set! convert? #t) #t]
               [(shared-vector? v) (set! convert? #t) #t]
               [(hashtable? v)
                (and (hashtable-kind v)
                     (begin
                       (set! convert? #t)
                       (let-values ([(ks vs) (hashtable-entries v)])
                         (and (walk ks d) (walk vs d)))))]
               [(and (record? v) (not (ftype-pointer? v)))
                (and (allowed-record-type? (record-rtd v))
                     (let loop ([fs (record-fields v)])
                       (or (null? fs) (and (walk (car fs) d) (loop (cdr fs))))))]
               [else #f]))]))
      (cond
        [(walk v 0) (if convert? 'convert 'plain)]
        [too-deep? 'too-deep]
        [else #f])))

  (define (place-message-allowed? v channel?) (and (memq (classify v channel?) '(plain convert)) #t))

  ;; The copy with wire-refs.  Descriptor owners are collected in order
  ;; into the list the sender attaches; a wire-ref names its owner's index.
  ;; A cycle through a box, record or hashtable that needs a wire-ref is
  ;; cut by the memo (the inner reference gets the outer original's copy
  ;; only for pairs and vectors).
  (define (convert v channel? channel->owner)
    (let ([memo (make-eq-hashtable)] [owners '()] [count 0])
      (define (owner-index! o)
        (set! owners (cons o owners))
        (set! count (fx+ count 1))
        (fx- count 1))
      (define (conv v)
        (cond
          [(or (scalar? v) (string? v) (bytevector? v)) v]
          [(hashtable-ref memo v #f)]
          [(pair? v)
           (let ([p (cons #f #f)])
             (hashtable-set! memo v p)
             (set-car! p (conv (car v)))
             (set-cdr! p (conv (cdr v)))
             p)]
          [(vector? v)
           (let* ([n (vector-length v)] [c (make-vector n)])
             (hashtable-set! memo v c)
             (do ([i 0 (fx+ i 1)]) ((fx= i n) c)
               (vector-set! c i (conv (vector-ref v i)))))]
          [(box? v)
           (let ([b (box #f)])          ; the receiver makes it immutable
             (hashtable-set! memo v b)
             (set-box! b (conv (unbox v)))
             b)]
          [(channel? v)
           ;; channel->owner: the endpoint, what was read from it here but
           ;; not delivered (bytes or #f), and the descriptors of those bytes
           (let-values ([(ep unread unread-fds) (channel->owner v)])
             (let ([i (owner-index! ep)])
               (for-each owner-index! unread-fds)
               (memoize v (make-wire-ref 'channel i unread (length unread-fds)))))]
          [(shared-vector? v)
           (memoize v (make-wire-ref 'shared (owner-index! v) (shared-vector-kind v)
                                     (shared-vector-length v)))]
          ;; remembered before their contents, so cycles through them close
          [(hashtable? v)
           (let ([w (memoize v (make-wire-ref 'hashtable (hashtable-kind v) #f #f))])
             (let-values ([(ks vs) (hashtable-entries v)])
               (wire-ref-b-set! w (conv ks))
               (wire-ref-c-set! w (conv vs))
               w))]
          [else                         ; an allowed record
           (let ([w (memoize v (make-wire-ref 'record (record-rtd v) #f #f))])
             (wire-ref-b-set! w (map conv (record-fields v)))
             w)]))
      (define (memoize v c) (hashtable-set! memo v c) c)
      (let ([c (conv v)])
        (values c (reverse owners)))))

  ;; Returns the payload bytes, the list of descriptor owners (channel
  ;; endpoints and shared vectors) and whether the payload is a raw
  ;; bytevector rather than fasl; or raises naming who.
  ;; A lone bytevector travels as itself (raw? = #t): no fasl copy on
  ;; either side.
  (define (encode-message who v channel? channel->owner)
    (if (bytevector? v)
        (values v '() #t)
        (encode-fasl who v channel? channel->owner)))

  (define (encode-fasl who v channel? channel->owner)
    (let ([kind (classify v channel?)])
      (unless kind
        (assertion-violation who "expected place-message-allowed?" v))
      (when (eq? kind 'too-deep)
        (assertion-violation who
          (format "expected place-message-allowed?: the message nests deeper than ~a levels" message-depth-limit)))
      (let-values ([(wire owners) (if (eq? kind 'plain)
                                      (values v '())
                                      (convert v channel? channel->owner))]
                   [(port get) (open-bytevector-output-port)])
        (fasl-write (cons (eq? kind 'convert) wire) port)
        (values (get) owners #f))))

  ;; fds: the descriptors that came with the message, in order.
  ;; fd->channel: makes a place channel endpoint of a received descriptor,
  ;; the bytes its sender had read from it, and their descriptors.
  (define (decode-message bv raw? fds fd->channel)
    (if raw?
        (begin (bytevector-set-immutable! bv) bv)
        (decode-fasl bv fds fd->channel)))

  (define (decode-fasl bv fds fd->channel)
    (let* ([msg (fasl-read (open-bytevector-input-port bv))]
           [fds (list->vector fds)]
           [memo (make-eq-hashtable)])
      (define (fd i) (vector-ref fds i))
      (define (resolve w)
        (case (wire-ref-kind w)
          [(channel)
           (let ([i (wire-ref-a w)])
             (fd->channel (fd i) (wire-ref-b w)
                          (let loop ([k (wire-ref-c w)] [acc '()])
                            (if (fx= k 0) acc (loop (fx- k 1) (cons (fd (fx+ i k)) acc))))))]
          [(shared) (descriptor->shared-vector (wire-ref-b w) (wire-ref-c w) (fd (wire-ref-a w)))]
          [(hashtable)
           (let ([h (make-kind-hashtable (wire-ref-a w))] [ks (wire-ref-b w)] [vs (wire-ref-c w)])
             (vector-for-each (lambda (k v) (hashtable-set! h (fix k) (fix-later v))) ks vs)
             (let ([r (hashtable-copy h #f)])
               (hashtable-set! memo w r)
               (vector-for-each (lambda (v) (when (container? v) (fix v))) vs)
               r))]
          [else
           (let* ([fields (wire-ref-b w)]
                  [r (apply (record-constructor
                              (make-record-constructor-descriptor (wire-ref-a w) #f #f))
                            (map fix-later fields))])
             (hashtable-set! memo w r)
             (for-each (lambda (v) (when (container? v) (fix v))) fields)
             r)]))
      ;; Pairs and vectors are decoded in place, so their identity is final
      ;; now; anything else is decoded at once.
      (define (container? v) (or (pair? v) (vector? v)))
      (define (fix-later v) (if (container? v) v (fix v)))
      ;; Freezes in place and replaces wire-refs; returns v's replacement.
      (define (fix v)
        (cond
          [(scalar? v) v]
          [(hashtable-ref memo v #f)]
          [(string? v) (string-set-immutable! v) v]
          [(bytevector? v) (bytevector-set-immutable! v) v]
          [(pair? v)
           (hashtable-set! memo v v)
           (let ([a (fix (car v))]) (unless (eq? a (car v)) (set-car! v a)))
           (let ([d (fix (cdr v))]) (unless (eq? d (cdr v)) (set-cdr! v d)))
           v]
          [(vector? v)
           (hashtable-set! memo v v)
           ;; (a vector that arrived immutable needs no replacement: the
           ;; sender's copies with wire-refs are fresh mutable vectors)
           (do ([i 0 (fx+ i 1)]) ((fx= i (vector-length v)))
             (let* ([x (vector-ref v i)] [y (fix x)])
               (unless (eq? x y) (vector-set! v i y))))
           (vector-set-immutable! v)
           v]
          [(wire-ref? v) (let ([r (resolve v)]) (hashtable-set! memo v r) r)]
          [(box? v)
           ;; Its replacement is remembered before its content is fixed,
           ;; so a cycle through it (it may hold itself) arrives as one
           ;; box.  An immutable box is filled once its content is known.
           (let ([b (if (immutable-box? v) v (box-immutable #f))] [c (unbox v)])
             (hashtable-set! memo v b)
             (let ([c2 (fix c)])
               (unless (and (eq? b v) (eq? c2 c)) (immutable-box-fill! b c2)))
             b)]
          [(record? v)
           (hashtable-set! memo v v)
           (for-each fix (record-fields v))
           v]
          [else v]))
      (let ([converted? (car msg)] [v (cdr msg)])
        (if (or converted? (not (scalar? v)))
            (fix v)
            v)))))
