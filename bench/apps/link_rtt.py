"""The round trip of an emulated link alone: starts scuda-link with the given
flags in front of an echo server on loopback and times one-byte pings through
it, so that a benchmark can set a case's time against the link it really
crossed rather than against the round trip it asked for.

Usage: link_rtt.py PATH/TO/scuda-link [LINK FLAGS...] [--pings N]
Prints one JSON object: link_rtt_ms (median), link_rtt_p10_ms, link_rtt_p90_ms."""
import argparse
import json
import socket
import statistics
import subprocess
import threading
import time


def echo_once():
    """A loopback port that echoes one connection's bytes back."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve():
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while data := conn.recv(1 << 16):
                conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port):
    for _ in range(500):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except ConnectionRefusedError:
            time.sleep(0.01)
    raise RuntimeError("scuda-link did not listen")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("link")
    parser.add_argument("--pings", type=int, default=500)
    args, flags = parser.parse_known_args()
    port = free_port()
    proc = subprocess.Popen([args.link, "--listen", f"127.0.0.1:{port}",
                             "--to", f"127.0.0.1:{echo_once()}", *flags])
    try:
        s = connect(port)
        times = []
        for _ in range(args.pings):
            start = time.perf_counter()
            s.sendall(b"x")
            if not s.recv(1):
                raise RuntimeError("the link closed the connection")
            times.append((time.perf_counter() - start) * 1e3)
    finally:
        proc.kill()
    times.sort()
    print(json.dumps({"link_rtt_ms": round(statistics.median(times), 4),
                      "link_rtt_p10_ms": round(times[len(times) // 10], 4),
                      "link_rtt_p90_ms": round(times[len(times) * 9 // 10], 4)}))


if __name__ == "__main__":
    main()
