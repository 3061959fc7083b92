"""Python peers for `bench io`, with asyncio (streams) and threads.

  python-io.py http            hello-world HTTP/1.1 server (asyncio): parses
                               the request line, headers, Content-Length,
                               keep-alive; prints "listening on PORT"
  python-io.py echo            echo server (asyncio)
  python-io.py delay MS        HTTP server answering after MS milliseconds
  python-io.py fetch W R URL   W threads share R GETs (new connection each)
  python-io.py sub W           W threads each run `sleep 0.1`
"""
import asyncio, socket, subprocess, sys, threading, time, urllib.request

def nodelay(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

async def http_conn(reader, writer, delay):
    nodelay(writer)
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            parts = line.split()
            if len(parts) != 3:
                writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                break
            headers = {}
            while True:
                h = await reader.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.partition(b":")
                headers[k.strip().lower()] = v.strip()
            n = int(headers.get(b"content-length", b"0"))
            if n:
                await reader.readexactly(n)
            conn = headers.get(b"connection", b"").lower()
            keep = conn != b"close" if parts[2] == b"HTTP/1.1" else conn == b"keep-alive"
            if delay:
                await asyncio.sleep(delay)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
                         + (b"" if keep else b"Connection: close\r\n") + b"\r\nHello, world!")
            await writer.drain()
            if not keep:
                break
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    writer.close()

async def echo_conn(reader, writer):
    nodelay(writer)
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    writer.close()

async def serve(handler):
    server = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=1024)
    print("listening on", server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()

def fetch(workers, requests, url):
    left = [requests]
    lock = threading.Lock()
    def worker():
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            with urllib.request.urlopen(url) as r:
                r.read()
    t0 = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(workers)]
    for t in ts: t.start()
    for t in ts: t.join()
    print("elapsed %.3f" % (time.monotonic() - t0))

def sub(workers):
    t0 = time.monotonic()
    ts = [threading.Thread(target=lambda: subprocess.run(["sleep", "0.1"])) for _ in range(workers)]
    for t in ts: t.start()
    for t in ts: t.join()
    print("elapsed %.3f" % (time.monotonic() - t0))

if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "http":
        asyncio.run(serve(lambda r, w: http_conn(r, w, 0)))
    elif mode == "delay":
        d = float(sys.argv[2]) / 1000
        asyncio.run(serve(lambda r, w: http_conn(r, w, d)))
    elif mode == "echo":
        asyncio.run(serve(echo_conn))
    elif mode == "fetch":
        fetch(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif mode == "sub":
        sub(int(sys.argv[2]))
