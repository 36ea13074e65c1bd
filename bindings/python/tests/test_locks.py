"""The binding's locks against the fixture cluster's 5 masters: the context
manager, extend, the report of a refusal, a lost lock, NoQuorum with nodes
down, ConfigError, fencing, a lock-delay, semaphores, readers and threads on
one handle."""
import os
import re
import subprocess
import threading
import time

import pytest

import libredlock
from conftest import handle, wait_until


def test_lock_is_a_context_manager_that_extends_and_releases(rl, nodes, fresh):
    res = fresh()
    with handle(nodes) as other:
        with rl.lock(res, ttl=10.0) as lk:
            assert lk.valid(0.5)
            assert re.fullmatch(r"[0-9a-f]{40}", lk.token)
            assert lk.resource == res and lk.slot is None and not lk.shared
            assert lk.fence == 0  # no fencing option
            lk.extend(20.0)
            assert lk.validity > 10.0
            with pytest.raises(libredlock.Taken):
                other.acquire(res)
        assert not lk.held and not lk.valid()
        with other.acquire(res, ttl=5.0) as again:  # released by the with block: free at once
            assert again.valid()


def test_taken_carries_the_node_by_node_report(rl, nodes, fresh):
    res = fresh()
    with rl.lock(res, ttl=10.0), handle(nodes) as other:
        with pytest.raises(libredlock.Taken) as caught:
            other.acquire(res, ttl=10.0)
    e = caught.value
    assert isinstance(e, libredlock.Error)
    assert e.code == -4 and e.report.result == -4
    assert [n.node for n in e.report.nodes] == nodes
    assert sum(n.vote == "no" for n in e.report.nodes) >= 3
    assert e.report.quorum == 3


def test_a_joint_handle_needs_a_quorum_of_each_list(nodes, fresh):
    res = fresh()
    old, new = nodes[0:3], nodes[2:5]
    with handle(new) as holder, handle(old, next_nodes=new) as joint:
        with holder.lock(res, ttl=10.0):
            with pytest.raises(libredlock.Taken) as caught:
                joint.acquire(res, ttl=10.0)
            assert "new " in str(caught.value) and "old " in str(caught.value)
        with joint.lock(res, ttl=10.0) as lk:
            assert lk.valid()
            with pytest.raises(libredlock.Taken):
                holder.acquire(res, ttl=10.0)
    with pytest.raises(libredlock.ConfigError, match="next_nodes names the same"):
        libredlock.Redlock(old, next_nodes=list(reversed(old)))


def test_a_handle_the_membership_records_refuse_raises_membership_refused(nodes, cli, fresh):
    res = fresh()
    old, new = nodes[0:3], nodes[2:5]
    env = dict(os.environ, REDLOCK_NODES=",".join(old), REDLOCK_NEXT_NODES=",".join(new))
    step = subprocess.run([cli, "membership", "begin"], env=env, capture_output=True, text=True, timeout=60)
    try:
        assert step.returncode == 0, step.stderr
        with handle(new) as early:
            with pytest.raises(libredlock.MembershipRefused) as caught:
                early.acquire(res, ttl=10.0)
            assert any(n.vote == "membership" and "accepts OLD and JOINT only" in n.detail
                       for n in caught.value.report.nodes), caught.value.report
        with handle(old, next_nodes=new) as joint, joint.lock(res, ttl=10.0) as lk:
            assert lk.valid()
    finally:
        for uri in nodes:
            host, port = uri.rsplit("/", 1)[-1].rsplit(":", 1)
            subprocess.run(["redis-cli", "-h", host, "-p", port, "DEL", "redlock:membership"], capture_output=True,
                           timeout=10)


def test_explicit_acquire_and_release(rl, fresh):
    lk = rl.acquire(fresh(), ttl=10.0, wait=1.0)
    assert lk.held
    lk.release()
    assert not lk.held
    with pytest.raises(libredlock.InvalidArgument, match="already released"):
        lk.release()


def test_lost_lock_release_raises_not_held(nodes, fresh):
    res = fresh()
    with handle(nodes, op_timeout_ms=200) as rl, handle(nodes) as other:  # (a TTL of 0.4 s must exceed 200 ms)
        lk = rl.acquire(res, ttl=0.4)
        assert wait_until(lambda: lk.validity <= 0)
        thief = other.acquire(res, ttl=10.0, wait=5.0)
        with pytest.raises(libredlock.NotHeld):
            lk.extend()
        with pytest.raises(libredlock.NotHeld) as caught:
            lk.release()
        assert sum(n.vote == "no" for n in caught.value.report.nodes) >= 3
        assert thief.valid()
        thief.release()


def test_a_lock_delay_refuses_an_expired_lock_and_its_kinds(nodes, fresh):
    res = fresh()
    with handle(nodes, lock_delay_ms=1500, op_timeout_ms=200) as a, handle(nodes, lock_delay_ms=1500) as b:
        lk = a.acquire(res, ttl=0.3)  # (a TTL that must exceed a's op timeout)
        assert wait_until(lambda: lk.validity <= 0)  # expired, never released
        time.sleep(0.2)
        with pytest.raises(libredlock.Taken) as caught:
            b.acquire(res, ttl=5.0)
        assert any("lock-delay" in n.detail for n in caught.value.report.nodes), str(caught.value)
        with b.acquire(res, ttl=5.0, wait=5.0) as again:  # granted once the delay has passed
            assert again.valid()
        with pytest.raises(libredlock.ConfigError, match="permits have no lock-delay"):
            a.semaphore(fresh(), 2, 10.0)


def test_bad_input_is_refused_naming_the_value(rl, nodes):
    bad = list(nodes)
    bad[1] = "redis://127.0.0.1:notaport"
    with pytest.raises(libredlock.ConfigError, match="notaport") as caught:
        libredlock.Redlock(bad)
    assert caught.value.code == -2 and "notaport" in caught.value.report.message
    with pytest.raises(libredlock.ConfigError, match="op_timeout_msec"):
        libredlock.Redlock(nodes, op_timeout_msec=10)
    with pytest.raises(libredlock.ConfigError, match="retry_count"):
        libredlock.Redlock(nodes, retry_count=-1)
    with pytest.raises(libredlock.ConfigError):
        libredlock.Redlock([])
    with pytest.raises(libredlock.InvalidArgument, match="ttl"):
        rl.acquire("x", ttl=0)
    with pytest.raises(libredlock.InvalidArgument, match="resource"):
        rl.acquire("", ttl=1.0)


def test_no_quorum_with_three_nodes_down(nodes, cluster_dir, cluster_sh, fresh):
    def cluster(*args):
        subprocess.run([cluster_sh, *args, "-d", cluster_dir], check=True, capture_output=True)

    paused = [0, 2, 4]
    rl = libredlock.Redlock(nodes, connect_timeout_ms=300, op_timeout_ms=300, retry_count=0)
    try:
        for i in paused:
            cluster("pause", str(i))
        with pytest.raises(libredlock.NoQuorum) as caught:
            rl.acquire(fresh(), ttl=10.0)
        report = caught.value.report
        assert {i for i, n in enumerate(report.nodes) if n.vote != "yes"} >= set(paused)
        assert all(report.nodes[i].vote in ("timeout", "down", "error") for i in paused)
        assert report.yes <= 2
    finally:
        for i in paused:
            cluster("resume", str(i))
    # the nodes answer again: leave the cluster as it was found
    def granted():
        try:
            rl.acquire(fresh(), ttl=5.0).release()
            return True
        except libredlock.NoQuorum:
            return False
    assert wait_until(granted, timeout=30)
    rl.close()


def test_fencing_tokens_increase_and_a_stale_write_is_refused(nodes, fresh):
    res, key = fresh("res"), fresh("key")
    with handle(nodes[1:], fencing=1) as rl, handle(nodes[:1]) as store:
        with rl.lock(res) as first:
            f1 = first.fence
        with rl.lock(res) as second:
            f2 = second.fence
        assert 0 < f1 < f2
        store.fenced_set(key, "from the second holder", f2)
        with pytest.raises(libredlock.Stale):
            store.fenced_set(key, "from the first holder, late", f1)


def test_semaphore_admits_at_most_limit_holders(rl, nodes, fresh):
    res = fresh()
    a = rl.semaphore(res, 2, 10.0)
    b = rl.semaphore(res, 2, 10.0)
    assert {a.slot, b.slot} == {0, 1}
    assert a.resource == f"{res}:permit:{a.slot}"
    with handle(nodes) as other:
        with pytest.raises(libredlock.Taken):
            other.semaphore(res, 2, 10.0)
        freed = a.slot
        a.release()
        c = other.semaphore(res, 2, 10.0)
        assert c.slot == freed
        c.release()
    b.release()
    with pytest.raises(libredlock.InvalidArgument, match="limit"):
        rl.semaphore(res, 0, 10.0)


def test_readers_share_and_keep_a_writer_out(rl, nodes, fresh):
    res = fresh()
    with handle(nodes) as other:
        r1, r2 = rl.reader(res, 10.0), other.reader(res, 10.0)
        assert r1.shared and r2.shared
        with pytest.raises(libredlock.Taken):
            other.lock(res)
        r1.release()
        r2.release()
        with other.lock(res) as writer:
            assert writer.valid() and not writer.shared


def test_six_threads_on_one_handle_never_overlap(nodes, fresh):
    # retries enough for each thread to outwait the five others, so that only an overlap can fail it
    rl = handle(nodes, retry_count=1000)
    res = fresh()
    rounds = 15
    state = {"inside": 0, "counter": 0, "overlaps": 0}
    guard = threading.Lock()  # only makes the overlap count itself exact
    errors = []

    def work():
        for _ in range(rounds):
            try:
                with rl.lock(res, ttl=5.0, wait=30.0):
                    with guard:
                        state["inside"] += 1
                        if state["inside"] > 1:
                            state["overlaps"] += 1
                    seen = state["counter"]
                    time.sleep(0.002)  # a second holder would lose this increment
                    state["counter"] = seen + 1
                    with guard:
                        state["inside"] -= 1
            except libredlock.Error as e:
                errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rl.close()
    assert errors == []
    assert state["overlaps"] == 0
    assert state["counter"] == 6 * rounds


def test_cancel_waits_ends_a_wait(rl, nodes, fresh):
    res = fresh()
    with handle(nodes) as holder, holder.lock(res, ttl=30.0):
        outcome = []
        t = threading.Thread(target=lambda: outcome.append(_try(lambda: rl.lock(res, wait=60.0))))
        t.start()
        # cancel until the waiting thread has seen it: a cancel before its wait began would not reach it
        assert wait_until(lambda: (rl.cancel_waits(), bool(outcome))[1], timeout=30)
        t.join()
        assert isinstance(outcome[0], libredlock.Cancelled)


def _try(fn):
    try:
        return fn()
    except libredlock.Error as e:
        return e


def test_a_waiting_call_releases_the_gil(rl, nodes, fresh):
    # the waiter blocks inside the C call; only Python code of this thread can end its wait (the holder's
    # release), which could not run if the call held the GIL: the wait would then end by its bound, Taken
    res = fresh()
    events = []
    with handle(nodes) as holder:
        lk = holder.acquire(res, ttl=60.0)
        waiter = threading.Thread(target=lambda: events.append(_try(lambda: rl.acquire(res, ttl=5.0, wait=60.0))))
        waiter.start()
        time.sleep(0.2)  # let the waiter enter its wait (if it has not, the test still holds: it takes it at once)
        events.append("released")
        lk.release()
        waiter.join()
    assert events[0] == "released"
    assert isinstance(events[1], libredlock.Lock), events[1]
    events[1].release()
