# lock-count.py -- gdb script for lock-count.sh: counts S_mutex_acquire calls by
# mutex (S_tc_mutex, S_alloc_mutex [Chez 10 only], other) and by caller (a
# named C function, or "scheme-code" when the return address lies in no C
# function), then prints one line "tc=.. alloc=.. other=.. callers=.. try=..".
# Scheme's mutex-acquire on a user mutex (make-mutex) first calls
# S_mutex_tryacquire and calls S_mutex_acquire only when that fails, so
# S_mutex_tryacquire calls are counted too ("try=", any mutex).
import gdb
counts = {}
callers = {}
def addr(name):
    try:
        return int(gdb.parse_and_eval("(long)&" + name))
    except gdb.error:
        return None
TC = addr("S_tc_mutex")
ALLOC = addr("S_alloc_mutex")
class Count(gdb.Breakpoint):
    def stop(self):
        m = int(gdb.parse_and_eval("$rdi"))
        kind = "tc" if m == TC else ("alloc" if m == ALLOC else "other")
        counts[kind] = counts.get(kind, 0) + 1
        ret = int(gdb.parse_and_eval("*(long*)$rsp"))
        b = gdb.block_for_pc(ret)
        fn = b.function.name if (b is not None and b.function is not None) else None
        if fn is None:
            # stripped binaries (Debian's 9.5.8) keep the dynamic symbols
            s = gdb.execute("info symbol 0x%x" % ret, to_string=True)
            fn = s.split()[0] if not s.startswith("No symbol") else None
        key = fn or "scheme-code"
        callers[key] = callers.get(key, 0) + 1
        return False
class CountTry(gdb.Breakpoint):
    def stop(self):
        counts["try"] = counts.get("try", 0) + 1
        return False
Count("S_mutex_acquire")
CountTry("S_mutex_tryacquire")
gdb.execute("continue")
print("RESULT tc=%d alloc=%d other=%d try=%d callers=%s" % (
    counts.get("tc", 0), counts.get("alloc", 0), counts.get("other", 0), counts.get("try", 0),
    ",".join("%s:%d" % kv for kv in sorted(callers.items(), key=lambda kv: -kv[1]))))
