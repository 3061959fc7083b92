#!/usr/bin/env python3
"""For tests/test-repl.ss: drives `bin/spindle repl` in a pseudo-terminal.

Prints one result line per check (read by the test):
  ticks COROUTINE OWN IDEAL   ticks of two 10 ms tickers while the prompt waited
  break yes|no                Ctrl-C ended (let loop () (loop)) with a user break
  after-break VALUE           what (+ 1 2) printed next
  exit CODE                   the REPL's exit status after Ctrl-D
Every wait is bounded; the REPL is killed at the end if still alive.
"""
import os, pty, re, select, signal, sys, time

# --plain: argv is a plain `scheme` session, which imports (spindle repl)
# and starts read-eval-print-loop first (Ctrl-D then ends both loops).
plain = sys.argv[1] == "--plain"
argv = sys.argv[2:] if plain else sys.argv[1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)

out = b""

def wait_for(pattern, limit=15.0):
    """Reads until pattern (a regex on bytes read since mark) shows; returns the match or None."""
    global out
    end = time.time() + limit
    while True:
        m = re.search(pattern, out)
        if m:
            out = out[m.end():]
            return m
        left = end - time.time()
        if left <= 0:
            return None
        r, _, _ = select.select([fd], [], [], min(left, 0.1))
        if r:
            try:
                d = os.read(fd, 4096)
            except OSError:
                return None
            if not d:
                return None
            out += d

def send(s):
    os.write(fd, s.encode())

def run(expr):
    """Evaluates expr, which prints nothing, and waits for the next prompt."""
    send(expr + "\n")
    wait_for(rb">+ ")

def query(expr):
    """Evaluates expr, returns the next printed line."""
    send(expr + "\n")
    m = wait_for(rb"\n(\S[^\r\n]*)\r?\n>+ ")
    return m.group(1).decode(errors="replace") if m else None

try:
    if not wait_for(rb"> "):
        print("no-prompt " + out.decode(errors="replace").replace("\n", " "))
        sys.exit(0)
    if plain:
        send("(import (spindle) (spindle repl))\n")
        time.sleep(0.5)
        send("(read-eval-print-loop)\n")
        if not wait_for(rb">> "):
            print("no-prompt " + out.decode(errors="replace").replace("\n", " "))
            sys.exit(0)
    ticker = ("(lambda (count) (let loop ([next (+ (current-inexact-monotonic-milliseconds) 10.)])"
              " (let ([w (- next (current-inexact-monotonic-milliseconds))]) (when (> w 0.) (sleep (/ w 1000.))))"
              " (set-box! count (+ (unbox count) 1)) (loop (+ next 10.))))")
    run("(define co (box 0))")
    run("(define own (box 0))")
    run(f"(define tick {ticker})")
    run("(define t1 (thread (lambda () (tick co))))")
    run("(define t2 (thread (lambda () (tick own)) #:pool 'own))")
    time.sleep(0.3)
    first = query("(list (unbox co) (unbox own))")
    t0 = time.time()
    time.sleep(2.0)                      # idle at the prompt
    t1 = time.time()
    second = query("(list (unbox co) (unbox own))")
    try:
        a = [int(x) for x in first.strip("()").split()]
        b = [int(x) for x in second.strip("()").split()]
        print(f"ticks {b[0] - a[0]} {b[1] - a[1]} {int((t1 - t0) * 100)}")
    except Exception:
        print(f"ticks-unreadable {first!r} {second!r}")
    send("(let loop () (loop))\n")
    time.sleep(0.5)
    send("\x03")
    print("break " + ("yes" if wait_for(rb"user break[^>]*>+ ", 10) else "no"))
    print(f"after-break {query('(+ 1 2)')}")
    send("\x04")
    if plain:
        wait_for(rb"> ", 5)
        send("\x04")
    end = time.time() + 10
    status = None
    while time.time() < end:
        p, st = os.waitpid(pid, os.WNOHANG)
        if p:
            status = os.waitstatus_to_exitcode(st)
            break
        wait_for(rb"$^", 0.1)            # drain
    print(f"exit {status}")
finally:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass
