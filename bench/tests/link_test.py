"""scuda-link adds its round-trip time, paces to its bandwidth, and delivers
every byte intact. Usage: link_test.py PATH/TO/scuda-link"""
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
from link_rtt import connect, free_port  # noqa: E402  (the relay's own client helpers)


def echo_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve(conn):
        with conn:
            while data := conn.recv(1 << 16):
                conn.sendall(data)

    def accept_loop():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    return server.getsockname()[1]


def recv_exact(s, n):
    parts = []
    while n:
        part = s.recv(min(n, 1 << 20))
        assert part, "connection closed early"
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


def echoed(s, data):
    """Sends data from a thread while reading the echo; returns it and seconds."""
    start = time.monotonic()
    sender = threading.Thread(target=s.sendall, args=(data,))
    sender.start()
    got = recv_exact(s, len(data))
    sender.join()
    return got, time.monotonic() - start


def start_link(link, target, *flags):
    """The relay's process, a connection through it, and its port."""
    port = free_port()
    proc = subprocess.Popen([link, "--listen", f"127.0.0.1:{port}",
                             "--to", f"127.0.0.1:{target}", *flags])
    return proc, connect(port), port


def main():
    link = sys.argv[1]
    target = echo_server()

    proc, s, _ = start_link(link, target, "--rtt-ms", "20")
    try:
        got, seconds = echoed(s, b"ping")
        assert got == b"ping", got
        assert seconds >= 0.020, f"ping took {seconds * 1e3:.1f} ms, under the 20 ms RTT"
        data = os.urandom(4 << 20)
        got, _ = echoed(s, data)
        assert got == data, "4 MiB came back changed"
        s.close()
    finally:
        proc.terminate()
        proc.wait()

    # 2 MiB at 0.5 Gbit/s is 33.6 ms each way; the echo pipelines them.
    proc, s, port = start_link(link, target, "--gbit", "0.5")
    try:
        data = os.urandom(2 << 20)
        got, seconds = echoed(s, data)
        assert got == data, "paced data came back changed"
        wire = len(data) * 8 / 0.5e9
        assert seconds >= 0.95 * wire, f"{seconds * 1e3:.1f} ms, faster than 0.5 Gbit/s allows"
        # Two connections share the link: together they take twice as long.
        t = connect(port)
        results = {}
        threads = [threading.Thread(target=lambda k, c: results.update({k: echoed(c, data)}),
                                    args=(k, c)) for k, c in (("s", s), ("t", t))]
        start = time.monotonic()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        seconds = time.monotonic() - start
        assert all(got == data for got, _ in results.values()), "shared link changed data"
        assert seconds >= 0.95 * 2 * wire, \
            f"two connections took {seconds * 1e3:.1f} ms: each had the whole 0.5 Gbit/s"
        s.close()
        t.close()
    finally:
        proc.terminate()
        proc.wait()
    print("scuda-link: delay, pacing and integrity ok")


if __name__ == "__main__":
    main()
