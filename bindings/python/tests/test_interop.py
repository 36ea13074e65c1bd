"""The binding and the redlock tool on the same nodes: each sees the
other's locks, both ways (the same C core, the same keys)."""
import json
import re
import threading

import pytest

import libredlock
from conftest import run_cli


def test_a_lock_taken_by_the_tool_is_taken_for_python(rl, cli, nodes, fresh):
    res = fresh()
    got = run_cli(cli, nodes, "acquire", "--ttl", "30s", res)
    assert got.returncode == 0, got.stderr
    token = got.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{40}", token)
    with pytest.raises(libredlock.Taken):
        rl.acquire(res)
    # a waiting Python caller gets it once the tool releases it
    outcome = []
    waiter = threading.Thread(target=lambda: outcome.append(rl.acquire(res, ttl=10.0, wait=30.0)))
    waiter.start()
    released = run_cli(cli, nodes, "release", "--token-stdin", res, token=token)
    assert released.returncode == 0, released.stderr
    waiter.join()
    assert outcome and outcome[0].valid()
    outcome[0].release()


def test_a_lock_held_by_python_is_held_for_the_tool(rl, cli, nodes, fresh):
    res = fresh()
    lk = rl.acquire(res, ttl=30.0)
    refused = run_cli(cli, nodes, "exec", res, "--", "true")
    assert refused.returncode == 75, refused.stderr
    status = run_cli(cli, nodes, "status", "--json", res)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["state"] == "held", status.stdout
    # the tool releases Python's lock by its token: Python's release then finds it gone
    released = run_cli(cli, nodes, "release", "--token-stdin", res, token=lk.token)
    assert released.returncode == 0, released.stderr
    with pytest.raises(libredlock.NotHeld):
        lk.release()
    ran = run_cli(cli, nodes, "exec", res, "--", "true")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(run_cli(cli, nodes, "status", "--json", res).stdout)["state"] == "free"


def test_python_adopts_a_lock_the_tool_took(rl, cli, nodes, fresh):
    res = fresh()
    token = run_cli(cli, nodes, "acquire", "--ttl", "30s", res).stdout.strip()
    lk = rl.adopt(res, token, ttl=10.0)
    assert lk.token == token and lk.valid()
    lk.release()
    again = run_cli(cli, nodes, "acquire", "--ttl", "5s", res)
    assert again.returncode == 0, again.stderr
    assert run_cli(cli, nodes, "release", "--token-stdin", res, token=again.stdout.strip()).returncode == 0


def test_semaphore_and_readers_are_shared_with_the_tool(rl, cli, nodes, fresh):
    sem, rw = fresh("sem"), fresh("rw")
    permits = [rl.semaphore(sem, 2, 30.0), rl.semaphore(sem, 2, 30.0)]
    assert run_cli(cli, nodes, "exec", "--limit", "2", sem, "--", "true").returncode == 75
    permits.pop().release()
    assert run_cli(cli, nodes, "exec", "--limit", "2", sem, "--", "true").returncode == 0
    permits.pop().release()
    with rl.reader(rw, 30.0):
        assert run_cli(cli, nodes, "exec", "--shared", rw, "--", "true").returncode == 0
        assert run_cli(cli, nodes, "exec", rw, "--", "true").returncode == 75

