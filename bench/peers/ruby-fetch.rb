# The threads article's fetcher with Ruby threads: W threads share R GETs
# of URL (new connection each); prints "elapsed SECONDS".
require "net/http"
workers, requests, url = ARGV[0].to_i, ARGV[1].to_i, URI(ARGV[2])
queue = Queue.new
requests.times { |i| queue << i }
queue.close
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
threads = workers.times.map do
  Thread.new do
    while queue.pop
      Net::HTTP.get(url)
    end
  end
end
threads.each(&:join)
printf("elapsed %.3f\n", Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0)
