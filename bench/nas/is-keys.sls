#!chezscheme
;;; IS's keys and what checks them, for every mode: the class parameters,
;;; the published ranks of the test keys, the block of keys a member
;;; generates.
(library (nas is-keys)
  (export iterations class-parameters expected-rank block block-keys)
  (import (chezscheme) (nas random))

  (define iterations 10)

  ;; class -> (log2 N, log2 Bmax, test indices, test ranks)
  (define (class-parameters class)
    (case class
      [(S) '(16 11 #(48427 17148 23627 62548 4431) #(0 18 346 64917 65463))]
      [(W) '(20 16 #(357773 934767 875723 898999 404505) #(1249 11698 1039987 1043896 1048018))]
      [(A) '(23 19 #(2112377 662041 5336171 3642833 4250760) #(104 17523 123928 8288932 8388264))]
      [(B) '(25 21 #(41869 812306 5102857 18232239 26860214) #(33422937 10244 59149 33135281 99))]))

  ;; The published rank of test key t after iteration it: the reference
  ;; shifts each class's ranks by the iteration in its own way.
  (define (expected-rank class t rank it)
    (case class
      [(S) (if (fx<= t 2) (fx+ rank it) (fx- rank it))]
      [(W) (if (fx< t 2) (fx+ rank (fx- it 2)) (fx- rank it))]
      [(A) (if (fx<= t 2) (fx+ rank (fx- it 1)) (fx- rank (fx- it 1)))]
      [(B) (if (memv t '(1 2 4)) (fx+ rank it) (fx- rank it))]))

  ;; [start, end) of member id's share of n items (CGfor's block rule).
  (define (block n np id)
    (let* ([q (fxquotient n np)] [r (fxremainder n np)]
           [start (fx+ (fx* id q) (fxmin id r))])
      (values start (fx+ start q (if (fx< id r) 1 0)))))

  ;; Member id's block of the N keys, 32 bits a key (every key is below
  ;; Bmax <= 2^21).  Key i is Bmax/4 (r1 + r2 + r3 + r4) truncated, for
  ;; deviates r = x 2^-46 number 4i+1 .. 4i+4.  In the reference's doubles
  ;; every step is exact (the sums stay below 2^48, Bmax/4 is a power of
  ;; two), so the key is exactly (x1 + x2 + x3 + x4) >> (48 - log2 Bmax).
  (define (block-keys n max-key np id)
    (let-values ([(start end) (block n np id)])
      (let ([shift (fx- 48 (fx- (fxlength max-key) 1))]
            [mine (make-bytevector (fx* 4 (fx- end start)))])
        (let loop ([i start]
                   [x (random-next nas-seed (random-power nas-multiplier (fx* 4 start)))])
          (if (fx= i end)
              mine
              (let* ([x1 (random-next x nas-multiplier)] [x2 (random-next x1 nas-multiplier)]
                     [x3 (random-next x2 nas-multiplier)] [x4 (random-next x3 nas-multiplier)]
                     [k (fxsra (fx+ (fx+ x1 x2) (fx+ x3 x4)) shift)])
                (bytevector-u32-native-set! mine (fx* 4 (fx- i start)) k)
                (loop (fx+ i 1) x4))))))))
