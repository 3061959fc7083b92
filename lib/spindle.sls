#!chezscheme
;;; spindle: threads, parallel thread pools, events, channels, futures and places for Chez Scheme.
;;; Import as (import (except (chezscheme) thread? sleep make-parameter parameterize) (spindle)).
(library (spindle)
  (export
    ;; (spindle thread)
    thread thread? current-thread current-thread-pool make-parallel-thread-pool parallel-thread-pool?
    parallel-thread-pool-close thread-wait kill-thread break-thread thread-suspend
    thread-resume thread-running? thread-dead? sleep yield thread-dead-evt
    thread-suspend-evt thread-resume-evt thread-send thread-receive thread-try-receive
    thread-receive-evt thread-rewind-receive processor-count memory-order-acquire
    memory-order-release &break break-condition? &break-hang-up break-hang-up-condition?
    &break-terminate break-terminate-condition? break-enabled parameterize-break
    srfi-18-thread-pool box-cas! vector-cas! dump-threads thread-state thread-waits
    ;; (spindle deadlock)
    find-deadlocks deadlock-report deadlock-exit-enabled
    ;; (spindle parameter)
    make-parameter parameterize make-thread-parameter
    ;; (spindle event)
    evt? sync sync/timeout sync/enable-break sync/timeout/enable-break
    choice-evt wrap-evt handle-evt handle-evt? guard-evt nack-guard-evt
    poll-guard-evt replace-evt always-evt never-evt alarm-evt system-idle-evt
    current-inexact-milliseconds current-inexact-monotonic-milliseconds
    register-evt-record-type!
    make-channel channel? channel-get channel-try-get channel-put
    channel-put-evt channel-put-evt?
    make-semaphore semaphore? semaphore-post semaphore-wait semaphore-try-wait?
    semaphore-wait/enable-break semaphore-peek-evt semaphore-peek-evt?
    call-with-semaphore call-with-semaphore/enable-break
    make-async-channel async-channel? async-channel-get async-channel-try-get
    async-channel-put async-channel-put-evt
    ;; (spindle future)
    future touch future? would-be-future futures-enabled? current-future current-future-pool
    make-fsemaphore fsemaphore? fsemaphore-post fsemaphore-wait fsemaphore-try-wait?
    fsemaphore-count for/async map/async
    ;; (spindle place)
    dynamic-place place lift-places place? place-enabled? place-wait place-kill
    place-break place-dead-evt place-channel place-channel? place-channel-put
    place-channel-get place-channel-put/get place-message-allowed?
    make-shared-bytes shared-bytes shared-bytes? shared-bytes-length
    shared-bytes-ref shared-bytes-set! shared-bytes->bytevector
    make-shared-fxvector shared-fxvector shared-fxvector? shared-fxvector-length
    shared-fxvector-ref shared-fxvector-set!
    make-shared-flvector shared-flvector shared-flvector? shared-flvector-length
    shared-flvector-ref shared-flvector-set!
    ;; (spindle fork-join)
    fork-join CG? CG-id CG-np CGfor CGfor/stride CGBarrier CGpipeline CG-n0-only
    CGsend CGrecv CGbroadcast CGallreduce CGalltoall CGalltoallv fork-join-members fork-join-leader?
    CG-B CGid CGnp
    ;; (spindle tcp), (spindle unix-socket), (spindle port), (spindle blocking)
    tcp-listen tcp-accept tcp-accept-evt tcp-accept-ready? tcp-connect
    tcp-close tcp-abandon-port tcp-addresses tcp-listener? tcp-port?
    unix-socket-available? unix-socket-path? unix-socket-listen unix-socket-listener?
    unix-socket-accept unix-socket-accept-evt unix-socket-close-listener unix-socket-connect
    read-bytes-evt read-bytes-avail!-evt read-line-evt read-bytes-line-evt
    write-bytes-evt write-bytes-avail-evt eof-evt port-ready-evt make-pipe
    call-blocking
    ;; (spindle scope)
    call-with-task-scope task-scope? scope-thread scope-future scope-cancel!
    scope-cancelled? scope-cancel-caught? with-cancel-shield call-with-cancel-shield
    with-timeout move-on-after call-with-timeout call-with-move-on-after
    &cancelled cancelled-condition? &timeout timeout-condition?
    &scope-failure scope-failure-condition? scope-failure-conditions
    ;; (spindle custodian)
    make-custodian custodian? current-custodian custodian-shutdown-all
    custodian-shut-down? custodian-managed-list
    ;; (spindle subprocess), (spindle console)
    subprocess subprocess? subprocess-wait subprocess-status subprocess-kill subprocess-pid
    find-executable-path system* system*/exit-code process* shell-command/exit-code run-command
    stdin-port stdout-port stderr-port install-console-ports!
    ;; (spindle file)
    open-input-file/helper open-output-file/helper file->bytevector/helper
    ;; (spindle concurrent-hashtable)
    make-concurrent-eq-hashtable make-concurrent-eqv-hashtable make-concurrent-hashtable
    concurrent-hashtable? concurrent-hashtable-ref concurrent-hashtable-set!
    concurrent-hashtable-update! concurrent-hashtable-delete! concurrent-hashtable-contains?
    concurrent-hashtable-size concurrent-hashtable-keys concurrent-hashtable-entries
    concurrent-hashtable-clear! concurrent-hashtable-copy
    ;; (spindle synchronized-port)
    make-synchronized-port synchronized-port? with-port-lock call-with-port-lock)
  (import (except (spindle thread) thread-name)
          (only (spindle parameter) make-parameter parameterize make-thread-parameter)
          (except (spindle event) box-cas! vector-cas!)
          (except (spindle future) processor-count future-pool)
          (spindle scope)
          (except (spindle place) processor-count)
          (except (spindle fork-join) lift-places)
          (spindle tcp) (spindle unix-socket) (spindle port)
          (except (spindle blocking) blocking-helper-count blocking-helpers-busy?)
          (only (spindle deadlock) find-deadlocks deadlock-report deadlock-exit-enabled)
          (only (spindle custodian) make-custodian custodian? current-custodian custodian-shutdown-all
                custodian-shut-down? custodian-managed-list)
          (except (spindle subprocess) port-descriptor)
          (except (spindle console) binary-console-port console-port-descriptor)
          (spindle file)
          (spindle concurrent-hashtable)
          (spindle synchronized-port)))
