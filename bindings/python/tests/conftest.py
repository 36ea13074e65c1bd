"""Fixtures of the binding's tests: the fixture cluster's nodes
($REDLOCK_CLUSTER_DIR/nodes), the redlock tool ($REDLOCK_CLI) and fresh
resource names. A missing prerequisite fails the test that needs it, naming
it; nothing is skipped."""
import itertools
import os
import subprocess
import time
from typing import Callable, List, Optional

import pytest

import libredlock


def required_env(name: str, what: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: {what} (CTest sets it; see test/CMakeLists.txt)", pytrace=False)
    return value


@pytest.fixture(scope="session")
def cluster_dir() -> str:
    return required_env("REDLOCK_CLUSTER_DIR", "the fixture cluster's directory")


@pytest.fixture(scope="session")
def nodes(cluster_dir: str) -> List[str]:
    with open(os.path.join(cluster_dir, "nodes")) as f:
        uris = [line.strip() for line in f if line.strip()]
    assert len(uris) == 5, f"expected 5 nodes in {cluster_dir}/nodes, found {uris}"
    return uris


@pytest.fixture(scope="session")
def cli() -> str:
    return required_env("REDLOCK_CLI", "the redlock tool's path")


@pytest.fixture(scope="session")
def cluster_sh() -> str:
    return required_env("REDLOCK_CLUSTER_SH", "deploy/cluster.sh's path")


_counter = itertools.count()


@pytest.fixture
def fresh(request) -> Callable[[str], str]:
    """fresh(what): a resource name no other test or run uses."""
    run = f"{os.getpid()}-{time.monotonic_ns()}"
    return lambda what="r": f"py-test:{run}:{request.node.name}:{what}:{next(_counter)}"


def handle(nodes: List[str], **options) -> libredlock.Redlock:
    """A handle with the tests' timeouts unless given: a second to connect
    and to answer (the library's defaults, 100 and 50 ms, are for a quiet
    network; the suite runs beside other tests on a busy machine)."""
    options.setdefault("connect_timeout_ms", 1000)
    options.setdefault("op_timeout_ms", 1000)
    return libredlock.Redlock(nodes, **options)


@pytest.fixture
def rl(nodes):
    with handle(nodes) as h:
        yield h


def run_cli(cli: str, nodes: List[str], *args: str, token: Optional[str] = None) -> subprocess.CompletedProcess:
    """The redlock tool on the nodes, its output captured; a token goes to
    its stdin (never its command line, where any local user could read it)."""
    env = dict(os.environ, REDLOCK_NODES=",".join(nodes))
    return subprocess.run([cli, *args], env=env, input=None if token is None else token + "\n", capture_output=True,
                          text=True, timeout=60)


def wait_until(pred: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Polls pred until it holds, for at most timeout seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()
