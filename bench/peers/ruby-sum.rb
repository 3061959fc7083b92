# bench/peers/ruby-sum.rb -- Ruby peer of bench/executors.ss (2), after
# "Concurrency, Real and Imagined, in MRI": sum 1..n split over W workers as
# threads (GVL: no parallelism) and as fork+pipe child processes.
#   ruby bench/peers/ruby-sum.rb [--quick] [--runs K]
# Prints `sum.ruby-thread.nN.wW MS ms` and `sum.ruby-fork.nN.wW MS ms`; best of K.
quick = ARGV.include?("--quick")
i = ARGV.index("--runs")
runs = i ? ARGV[i + 1].to_i : 3
ns = quick ? [50_000, 500_000] : [50_000, 500_000, 5_000_000]
ws = [1, 2, 4, 8]

def ranges(n, w)
  chunk = n / w
  (0...w).map { |k| [1 + k * chunk, k == w - 1 ? n : (k + 1) * chunk] }
end

def range_sum(lo, hi)
  s = 0
  i = lo
  while i <= hi
    s += i
    i += 1
  end
  s
end

def with_threads(n, w)
  ranges(n, w).map { |lo, hi| Thread.new { range_sum(lo, hi) } }.sum(&:value)
end

def with_fork(n, w)
  kids = ranges(n, w).map do |lo, hi|
    r, wr = IO.pipe
    pid = fork do
      r.close
      wr.write(range_sum(lo, hi).to_s)
      wr.close
      exit!(0)
    end
    wr.close
    [pid, r]
  end
  kids.sum do |pid, r|
    v = r.read.to_i
    r.close
    Process.wait(pid)
    v
  end
end

def now_ms = Process.clock_gettime(Process::CLOCK_MONOTONIC) * 1000.0

ns.each do |n|
  check = n * (n + 1) / 2
  ws.each do |w|
    { "ruby-thread" => :with_threads, "ruby-fork" => :with_fork }.each do |mode, meth|
      best = nil
      runs.times do
        t0 = now_ms
        v = send(meth, n, w)
        dt = now_ms - t0
        raise "wrong result #{v}" unless v == check
        best = dt if best.nil? || dt < best
      end
      printf("sum.%s.n%d.w%d %.2f ms\n", mode, n, w, best)
      $stdout.flush
    end
  end
end
