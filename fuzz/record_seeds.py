#!/usr/bin/env python3
"""Records real traffic for the ops and replies harnesses' seeds.

Starts `scuda server` on the driver test double, puts a recording proxy in
front of it, runs client_tool's scenarios through the proxy, and writes
fuzz/corpus/ops/ (the requests of each op the clients sent, as ops_fuzz
reads them) and fuzz/corpus/replies/ (each reply payload for the decoders,
and the handshake with replies renumbered for the conversation that
replies_fuzz holds). One seed per op and direction keeps the corpus small.

    python3 fuzz/record_seeds.py BUILD   # BUILD: a build with the tests (build/)
"""
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HEADER = struct.Struct("<IHHIIQ")  # magic, version, flags, op, length, request id
MAGIC = 0x41444353


def protocol_version():
    """kProtocolVersion, read from the source, so that the seeds follow it."""
    frame_h = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "protocol",
                           "frame.h")
    found = re.search(r"kProtocolVersion = (\d+);", open(frame_h).read())
    if not found:
        sys.exit("record_seeds: no kProtocolVersion in src/protocol/frame.h")
    return int(found.group(1))


VERSION = protocol_version()
ONE_WAY, REPLY, ERROR, SYNCHRONIZING, OUTPUT = 1, 2, 4, 8, 16
HELLO = 1
MAX_PAYLOAD = 4096  # a longer payload is cut: bulk bytes teach the decoders nothing
SCENARIOS = [["submit"], ["zeros-round-trip"], ["upload", "1"], ["quota", "1", "1"],
             ["runtime-exit"], ["nap", "5"], ["unsupported"], ["cudart-primary"],
             ["launch-exit"]]
FIRST_GENERATED = 1000
GET_FUNCTION = 7


def frames(data):
    """The frames of one direction's bytes: (flags, op, request id, payload)."""
    at = 0
    while at + HEADER.size <= len(data):
        _, _, flags, op, length, rid = HEADER.unpack_from(data, at)
        at += HEADER.size
        yield flags, op, rid, data[at:at + length]
        at += length


def proxy(listener, upstream, recorded):
    """Forwards each connection to `upstream`, keeping both directions."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        server = socket.create_connection(upstream)
        record = {"up": bytearray(), "down": bytearray()}
        recorded.append(record)
        for src, dst, key in ((client, server, "up"), (server, client, "down")):
            threading.Thread(target=pump, args=(src, dst, record[key]), daemon=True).start()


def pump(src, dst, sink):
    try:
        while chunk := src.recv(65536):
            sink += chunk
            dst.sendall(chunk)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def start_server(build, tmp):
    out = open(os.path.join(tmp, "server.out"), "w+")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    server = subprocess.Popen(
        [os.path.join(build, "bin/scuda"), "server", "-l", "127.0.0.1:0", "--driver",
         os.path.join(build, "lib/libcuda_double.so"), "--drain-timeout", "0"],
        stdout=out, stderr=subprocess.DEVNULL, env=env)
    for _ in range(250):
        out.seek(0)
        if m := re.search(r"127\.0\.0\.1:(\d+)", out.read()):
            return server, int(m.group(1))
        time.sleep(0.02)
    server.kill()
    sys.exit("record_seeds: the server did not say where it listens")


def write_seed(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def ops_record(op, flags, payload):
    """One request as ops_fuzz reads it: u16 op, u8 flags, u16 length, payload."""
    payload = payload[:min(MAX_PAYLOAD, 0xFFFF)]
    return struct.pack("<HBH", op, flags & (ONE_WAY | SYNCHRONIZING), len(payload)) + payload


def conversation(head, welcome, generated, described, data):
    """A server's side of replies_fuzz's conversation: the welcome, then the
    replies to its four requests (ids 1 to 4): 64 bytes for deliver_later,
    a generated op's reply for handle_later, a function lookup's reply for
    receive, and 48 bytes for receive_into."""
    out = bytearray(b"\x00") + HEADER.pack(*head) + welcome
    ok = struct.pack("<I", 0)
    for rid, (op, payload) in enumerate(
            [(4, ok + data[:64]), generated, described, (250, ok + data[:48])], start=1):
        out += HEADER.pack(MAGIC, VERSION, REPLY, op, len(payload), rid) + payload
    return bytes(out)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    root = os.path.dirname(os.path.abspath(__file__))
    tmp = tempfile.mkdtemp(prefix="scuda-seeds-")
    server, port = start_server(build, tmp)
    listener = socket.create_server(("127.0.0.1", 0))
    recorded = []
    threading.Thread(target=proxy, args=(listener, ("127.0.0.1", port), recorded),
                     daemon=True).start()
    env = dict(os.environ, SCUDA_SERVER="127.0.0.1:%d" % listener.getsockname()[1])
    try:
        for n, scenario in enumerate(SCENARIOS):
            # A cache of its own: a client that kept no images on the server
            # sends none, as replies_fuzz's client does.
            env["SCUDA_CACHE_DIR"] = os.path.join(tmp, "client-cache-%d" % n)
            subprocess.run([os.path.join(build, "bin/client_tool")] + scenario, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    finally:
        time.sleep(0.5)
        listener.close()
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    requests, replies, welcome, sessions = {}, {}, None, []
    for record in recorded:
        up = list(frames(bytes(record["up"])))
        if not up or up[0][1] != HELLO:
            continue  # a lane or channel's join: its frames are no session's requests
        session = []  # the connection's first requests, as many as ops_fuzz serves
        for flags, op, rid, payload in up:
            if op == HELLO:
                continue
            seed = ops_record(op, flags, bytes(payload))
            requests.setdefault(op, seed)
            if len(session) < 64 and sum(map(len, session)) + len(seed) < 60000:
                session.append(seed)
        if session:
            sessions.append(b"".join(session))
        for flags, op, rid, payload in frames(bytes(record["down"])):
            if flags & REPLY and op == HELLO and welcome is None and len(payload) > 4:
                welcome = (flags, op, len(payload), rid, bytes(payload))
            elif flags & REPLY and op not in replies and len(payload) >= 4:
                replies[op] = (flags, op, rid, bytes(payload[:MAX_PAYLOAD]))
    if welcome is None or not requests:
        sys.exit("record_seeds: no traffic was recorded")
    ops_dir, replies_dir = os.path.join(root, "corpus/ops"), os.path.join(root, "corpus/replies")
    # Recorded seeds are made again; the crash-* inputs fixed bugs left, and stay.
    for folder in (ops_dir, replies_dir):
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            if not name.startswith("crash-"):
                os.remove(os.path.join(folder, name))
    for op, seed in sorted(requests.items()):
        write_seed(ops_dir, "op-%d" % op, b"\x01" + seed)
    for n, session in enumerate(sessions):
        write_seed(ops_dir, "session-%d" % n, b"\x01" + session)
    for op, (_, _, _, payload) in sorted(replies.items()):
        # The decoders' part reads the payload after its result word.
        write_seed(replies_dir, "reply-%d" % op, b"\x01" + payload[4:])
    flags, op, length, rid, payload = welcome
    head = (MAGIC, VERSION, flags, op, length, 0)
    described = replies.get(GET_FUNCTION)
    data = bytes(range(256))
    generated = [(op, reply[3]) for op, reply in sorted(replies.items()) if op >= FIRST_GENERATED]
    if described:
        for n, reply in enumerate(generated):
            write_seed(replies_dir, "conversation-%d" % n,
                       conversation(head, payload, reply, (GET_FUNCTION, described[3]), data))
    print("record_seeds: %d request seeds, %d reply seeds" % (len(requests), len(os.listdir(replies_dir))))


if __name__ == "__main__":
    main()
