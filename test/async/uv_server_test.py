#!/usr/bin/env python3
"""uv_server_test.py UV_SERVER [--valgrind SUPP] -- runs examples/uv_server
against the fixture cluster ($REDLOCK_CLUSTER_DIR/nodes) and checks what its
clients see:

  - a line KEY is answered "granted <validity ms>", lines in order, and the
    lock is released afterwards (no key left on the nodes);
  - several clients asking for the same key at once are all granted, one
    after the other;
  - a key another owner holds is answered "refused lock is held by another
    owner" after the 1 s wait;
  - a client that hangs up while it waits does not disturb the server;
  - SIGINT with a request waiting: the client gets "refused cancelled ...",
    the server closes every connection and exits 0.

With --valgrind the server runs under valgrind memcheck (leaks included) and
any error fails the test. Exit status 0 when everything held, 1 otherwise.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT = 60.0


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def nodes():
    """The fixture cluster's node URIs."""
    d = os.environ.get("REDLOCK_CLUSTER_DIR")
    if not d:
        fail("REDLOCK_CLUSTER_DIR is not set")
    with open(os.path.join(d, "nodes")) as f:
        return [line.strip() for line in f if line.strip()]


def redis(uri, *args):
    """One RESP command on the node at uri (redis://127.0.0.1:PORT); returns
    the first reply line."""
    host, port = uri[len("redis://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        req = "*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args)
        s.sendall(req.encode())
        return s.makefile("rb").readline().decode().strip()


class Client:
    """A line client of the server."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.rf = self.sock.makefile("rb")

    def send(self, text):
        self.sock.sendall(text.encode())

    def line(self):
        got = self.rf.readline().decode()
        if not got.endswith("\n"):
            fail("connection closed before an answer (got %r)" % got)
        return got.rstrip("\n")

    def close(self):
        self.rf.close()
        self.sock.close()


def expect_granted(answer, what):
    m = re.fullmatch(r"granted (\d+)", answer)
    if not m or not 0 < int(m.group(1)) <= 2000:
        fail("%s: expected 'granted <1..2000>', got %r" % (what, answer))


def keys_left(uris):
    return sum(int(redis(u, "DBSIZE").lstrip(":")) for u in uris)


def main():
    if len(sys.argv) < 2:
        fail("usage: uv_server_test.py UV_SERVER [--valgrind SUPP]")
    server = sys.argv[1]
    uris = nodes()
    for u in uris:
        redis(u, "FLUSHALL")
    cmd = [server, "-p", "0"] + uris
    vglog = None
    if len(sys.argv) >= 4 and sys.argv[2] == "--valgrind":
        vglog = tempfile.NamedTemporaryFile(prefix="uv_server_vg", suffix=".log", delete=False).name
        cmd = ["valgrind", "--quiet", "--leak-check=full", "--show-leak-kinds=definite,indirect",
               "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
               "--suppressions=" + sys.argv[3], "--log-file=" + vglog] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        m = re.fullmatch(r"listening on 127\.0\.0\.1:(\d+)\n", first)
        if not m:
            fail("server did not start: %r" % first)
        port = int(m.group(1))

        # Lines are answered in order; empty lines are skipped.
        c = Client(port)
        c.send("t:a\n\nt:b\r\nt:a\n")
        for what in ("t:a", "t:b", "t:a again"):
            expect_granted(c.line(), what)

        # Eight clients on one key at once: all granted, one at a time.
        answers = []

        def one():
            k = Client(port)
            k.send("t:shared\n")
            answers.append(k.line())
            k.close()

        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
        if len(answers) != 8:
            fail("only %d of 8 concurrent clients were answered" % len(answers))
        for a in answers:
            expect_granted(a, "concurrent t:shared")

        # Released after answering: no key is left on the nodes.
        deadline = time.time() + 3
        while keys_left(uris) and time.time() < deadline:
            time.sleep(0.05)
        if keys_left(uris):
            fail("lock keys left on the nodes after the answers")

        # Another owner holds t:held on every node for 30 s.
        for u in uris:
            redis(u, "SET", "t:held", "someone-else", "PX", "30000")
        t0 = time.time()
        c.send("t:held\n")
        ans = c.line()
        if ans != "refused lock is held by another owner":
            fail("held key: got %r" % ans)
        if time.time() - t0 < 0.5:
            fail("held key refused after %.2f s: it did not wait" % (time.time() - t0))

        # A client hanging up while it waits; the server keeps serving.
        gone = Client(port)
        gone.send("t:held\n")
        time.sleep(0.2)
        gone.close()
        time.sleep(0.2)
        c.send("t:c\n")
        expect_granted(c.line(), "after a client hung up")

        # SIGINT while a request waits: the waiter is told, the server ends.
        c.send("t:held\n")
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        ans = c.line()
        if ans != "refused cancelled before it completed":
            fail("waiting request at SIGINT: got %r" % ans)
        if c.rf.readline() != b"":
            fail("connection still open after SIGINT")
        c.close()
        rc = proc.wait(TIMEOUT)
        if rc != 0:
            fail("server exited with %d after SIGINT" % rc)
        if vglog and os.path.getsize(vglog):
            with open(vglog) as f:
                print(f.read())
            fail("valgrind reported problems")
        for u in uris:
            redis(u, "DEL", "t:held")
        print("uv_server: all checks passed")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if vglog:
            os.unlink(vglog)


if __name__ == "__main__":
    main()
