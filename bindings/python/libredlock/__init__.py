"""libredlock: Redlock distributed locks over N Redis masters, for Python.

A thin binding of the C library libredlock.so.0 (ctypes, standard library
only): every lock, semaphore and reader lock is the C core's, so Python
programs, C programs and the ``redlock`` command-line tool exclude each
other on the same nodes.

    import libredlock

    rl = libredlock.Redlock(["redis://10.0.0.1", "redis://10.0.0.2", "redis://10.0.0.3"])
    with rl.lock("invoice:42", ttl=10.0, wait=2.0) as lk:
        ...  # the only holder anywhere while lk.valid()

Durations are seconds (floats). One :class:`Redlock` may be shared by any
number of threads; a :class:`Lock` belongs to one thread at a time. Calls
that wait on the network release the GIL.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Optional, Sequence, Type, Union

from . import _abi

__all__ = [
    "Redlock", "Lock", "Report", "NodeReport", "Error", "ConfigError", "InvalidArgument", "Taken", "NoQuorum",
    "Expired", "NotHeld", "AuthError", "ServerError", "Stale", "Cancelled", "Deadlock", "OutOfMemory",
    "MembershipRefused",
]
__version__ = "0.1.0"

_lib = _abi.load()


@dataclass(frozen=True)
class NodeReport:
    """How one node took part in a call."""
    node: str      #: the node's URI, any password masked
    vote: str      #: "yes", "no", "timeout", "down", "error" or "pending"
    err: int       #: 0 for yes and no, else the C error code that explains the vote
    rtt_us: int    #: round trip of its answer in microseconds, -1 if none
    detail: str    #: the node's error text or a short explanation
    address: str   #: the address its connection uses, "" if none


@dataclass(frozen=True)
class Report:
    """What one call did, node by node (the C library's redlock_report_t)."""
    result: int
    message: str
    attempts: int = 0
    quorum: int = 0
    yes: int = 0
    no: int = 0
    failed: int = 0
    elapsed_us: int = 0
    validity_ms: int = 0
    slot: int = -1
    nodes: tuple = ()


class Error(Exception):
    """A call of the library failed: ``code`` is its C return code (a
    negative REDLOCK_ERR_* value) and ``report`` what each node did."""

    def __init__(self, message: str, code: int, report: Report):
        super().__init__(message)
        self.code = code
        self.report = report


class ConfigError(Error, ValueError):
    """Bad options or a bad node URI (REDLOCK_ERR_CONFIG)."""


class InvalidArgument(Error, ValueError):
    """A bad argument: an empty resource, a TTL of 0 ... (REDLOCK_ERR_INVALID)."""


class Taken(Error):
    """The lock is held by another owner (REDLOCK_ERR_TAKEN)."""


class NoQuorum(Error):
    """Too few nodes answered usefully to reach a quorum (REDLOCK_ERR_NO_QUORUM)."""


class Expired(Error):
    """A quorum granted, but no validity was left (REDLOCK_ERR_EXPIRED)."""


class NotHeld(Error):
    """The lock is gone: expired, released or taken over (REDLOCK_ERR_NOT_HELD)."""


class AuthError(Error):
    """Credentials or permissions refused by enough nodes (REDLOCK_ERR_AUTH)."""


class ServerError(Error):
    """A quorum answered with an error reply (REDLOCK_ERR_SERVER)."""


class Stale(Error):
    """fenced_set(): the store has seen a newer fencing token (REDLOCK_ERR_STALE)."""


class Cancelled(Error):
    """A wait ended by cancel_waits() (REDLOCK_ERR_CANCELLED)."""


class Deadlock(Error):
    """This thread would wait for a lock it holds itself (REDLOCK_ERR_DEADLOCK)."""


class MembershipRefused(Error):
    """The nodes' membership records do not accept this handle's node list now
    (REDLOCK_ERR_MEMBERSHIP): redeploy it with the lists the change is at."""


class OutOfMemory(Error, MemoryError):
    """An allocation failed (REDLOCK_ERR_NOMEM)."""


_E = _abi.ERRORS
_CLASSES = {
    _E["CONFIG"]: ConfigError, _E["INVALID"]: InvalidArgument, _E["TAKEN"]: Taken, _E["NO_QUORUM"]: NoQuorum,
    _E["EXPIRED"]: Expired, _E["NOT_HELD"]: NotHeld, _E["AUTH"]: AuthError, _E["SERVER"]: ServerError,
    _E["STALE"]: Stale, _E["CANCELLED"]: Cancelled, _E["DEADLOCK"]: Deadlock, _E["NOMEM"]: OutOfMemory,
    _E["MEMBERSHIP"]: MembershipRefused,
}


def _text(b: Optional[bytes]) -> str:
    return b.decode("utf-8", "replace") if b else ""


def _report(c: _abi.Report) -> Report:
    n = min(c.n_nodes, _abi.MAX_NODES)
    nodes = tuple(
        NodeReport(node=_text(x.node), vote=_text(_lib.redlock_vote_name(x.vote)), err=x.err, rtt_us=x.rtt_us,
                   detail=_text(x.detail), address=_text(x.address)) for x in c.nodes[:n])
    return Report(result=c.result, message=_text(c.message), attempts=c.attempts, quorum=c.quorum, yes=c.yes,
                  no=c.no, failed=c.failed, elapsed_us=c.elapsed_us, validity_ms=c.validity_ms, slot=c.slot,
                  nodes=nodes)


def _error(code: int, report: Report) -> Error:
    cls: Type[Error] = _CLASSES.get(code, Error)
    text = _text(_lib.redlock_strerror(code))
    # a round's message starts with the code's own text; a refusal's names the bad value only
    message = report.message if report.message.startswith(text) else f"{text}: {report.message}".rstrip(": ")
    return cls(message, code, report)


def _check(code: int, c_report: _abi.Report) -> None:
    if code != 0:
        raise _error(code, _report(c_report))


def _refuse(cls: Type[Error], message: str) -> Error:
    code = {ConfigError: _E["CONFIG"], InvalidArgument: _E["INVALID"]}.get(cls, _E["INVALID"])
    return cls(message, code, Report(result=code, message=message))


def _ms(name: str, seconds: float, allow_zero: bool = False) -> int:
    """Seconds to whole milliseconds, refusing what the C call cannot take."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        raise _refuse(InvalidArgument, f"{name} must be a finite number of seconds, not {seconds!r}")
    ms = round(seconds * 1000)
    if ms < 0 or (ms == 0 and not allow_zero) or ms > 2147483647:
        raise _refuse(InvalidArgument, f"{name} {seconds!r} s is out of range "
                      f"({'0' if allow_zero else '0.001'} .. 2147483.647 s)")
    return ms


def _wait_ms(wait: Optional[float]) -> int:
    return -1 if wait is None else _ms("wait", wait, allow_zero=True)


def _bytes(name: str, value: str) -> bytes:
    if not isinstance(value, str) or not value:
        raise _refuse(InvalidArgument, f"{name} must be a non-empty str, not {value!r}")
    return value.encode()


def _uri_list(nodes: Union[str, Sequence[str]]) -> list:
    """A list of node URIs from a comma-separated str or a sequence of str."""
    if isinstance(nodes, str):
        nodes = [n for n in nodes.split(",") if n]
    nodes = list(nodes)
    for n in nodes:
        if not isinstance(n, str):
            raise _refuse(ConfigError, f"a node URI must be a str, not {n!r}")
    return nodes


def _set_option(opt: _abi.Options, name: str, value: object) -> None:
    """Sets one C option by its field name, checking its type and range."""
    ctype = dict(_abi.Options._fields_).get(name)
    if name in ("log", "log_arg"):
        raise _refuse(ConfigError, f"option {name} is not available from Python (a C function pointer)")
    if ctype is None or name in ("nodes", "n_nodes", "next_nodes", "n_next_nodes"):
        raise _refuse(ConfigError, f"unknown option {name!r} (options are redlock_options_t's fields, "
                      "e.g. op_timeout_ms, retry_count, fencing)")
    if ctype is ctypes.c_char_p:
        if value is not None and not isinstance(value, str):
            raise _refuse(ConfigError, f"option {name} must be a str or None, not {value!r}")
        setattr(opt, name, value.encode() if value is not None else None)
    elif ctype is ctypes.c_double:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _refuse(ConfigError, f"option {name} must be a number, not {value!r}")
        setattr(opt, name, float(value))
    else:
        if not isinstance(value, int):
            raise _refuse(ConfigError, f"option {name} must be an int, not {value!r}")
        bits = ctypes.sizeof(ctype) * 8
        low, high = (0, 2**bits - 1) if ctype is ctypes.c_uint32 else (-2**(bits - 1), 2**(bits - 1) - 1)
        if not low <= value <= high:
            raise _refuse(ConfigError, f"option {name} {value} is out of range ({low} .. {high})")
        setattr(opt, name, int(value))


class Lock:
    """One held lock: a mutex, a semaphore's permit or a reader's lock.

    Made by :meth:`Redlock.lock` and its kin; a context manager that releases
    it on exit. Belongs to one thread at a time. A lock dropped without
    :meth:`release` is abandoned: its keys expire by their TTL."""

    def __init__(self, rl: "Redlock", ptr: ctypes.c_void_p, ttl_ms: int):
        self._rl = rl
        self._ptr: Optional[int] = ptr.value
        self._ttl_ms = ttl_ms

    def _held(self) -> int:
        if self._ptr is None:
            raise _refuse(InvalidArgument, "the lock was already released")
        return self._ptr

    @property
    def resource(self) -> str:
        """The locked resource (for a permit, its slot key "<resource>:permit:<slot>")."""
        return _text(_lib.redlock_lock_resource(self._held()))

    @property
    def token(self) -> str:
        """The lock's token, 40 hex characters: a secret, whoever has it can release the lock."""
        return _text(_lib.redlock_lock_token(self._held()))

    @property
    def fence(self) -> int:
        """The fencing token (strictly greater than every earlier holder's), 0 without ``fencing=1``."""
        return _lib.redlock_lock_fence(self._held())

    @property
    def slot(self) -> Optional[int]:
        """A permit's slot (0-based); None for other locks."""
        s = _lib.redlock_lock_slot(self._held())
        return s if s >= 0 else None

    @property
    def shared(self) -> bool:
        """True for a reader's lock."""
        return bool(_lib.redlock_lock_is_shared(self._held()))

    @property
    def validity(self) -> float:
        """Seconds of validity left (by the local clock); <= 0 once expired."""
        return _lib.redlock_lock_validity_ms(self._held()) / 1000.0

    @property
    def held(self) -> bool:
        """False once released."""
        return self._ptr is not None

    def valid(self, margin: float = 0.0) -> bool:
        """True while the lock has more than ``margin`` seconds of validity
        left: call it right before a protected side effect."""
        if self._ptr is None:
            return False
        return bool(_lib.redlock_lock_valid(self._ptr, _ms("margin", margin, allow_zero=True)))

    def extend(self, ttl: Optional[float] = None) -> None:
        """Resets the lock's TTL to ``ttl`` seconds (default: its TTL) on a
        quorum. Raises :class:`NotHeld` when the lock is gone, or another
        :class:`Error`; the lock then keeps its old deadline."""
        ms = self._ttl_ms if ttl is None else _ms("ttl", ttl)
        rep = _abi.Report()
        _check(_lib.redlock_extend_ex(self._rl._live(), self._held(), ms, ctypes.byref(rep)), rep)
        self._ttl_ms = ms

    def release(self) -> None:
        """Releases the lock on every node; the Lock is done with whatever
        happens. Raises :class:`NotHeld` when a quorum no longer had it (it
        expired or was taken over: the critical section may not have been
        exclusive), :class:`NoQuorum` when too few nodes answered to tell
        (the keys expire by their TTL)."""
        ptr = self._held()
        self._ptr = None
        rep = _abi.Report()
        handle = self._rl._handle
        if handle is None:
            _lib.redlock_lock_free(ptr)
            raise _refuse(InvalidArgument, "the Redlock handle was closed: the lock expires by its TTL")
        _check(_lib.redlock_release_ex(handle, ptr, ctypes.byref(rep)), rep)

    def abandon(self) -> None:
        """Forgets the lock without releasing it: its keys stay until their
        TTL runs out (another process may adopt it by its token)."""
        if self._ptr is not None:
            _lib.redlock_lock_free(self._ptr)
            self._ptr = None

    def __enter__(self) -> "Lock":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        # A failed release raises only when the body did not: the body's
        # exception says more.
        if self._ptr is None:
            return
        try:
            self.release()
        except Error:
            if exc_type is None:
                raise

    def __del__(self) -> None:
        # at interpreter exit the module's globals may already be gone
        if getattr(self, "_ptr", None) is not None and _lib is not None:
            _lib.redlock_lock_free(self._ptr)
            self._ptr = None

    def __repr__(self) -> str:
        if self._ptr is None:
            return "<libredlock.Lock released>"
        return f"<libredlock.Lock {self.resource!r} validity={self.validity:.3f}s fence={self.fence}>"


class Redlock:
    """A handle on N Redis nodes: ``Redlock(nodes, **options)``.

    ``nodes`` is a sequence of node URIs (``redis://[user[:password]@]host[:port][/db]``,
    ``rediss://``, ``unix:///path``, ``redis+cluster://``, ``redis+sentinel://``),
    or one str of them separated by commas. ``next_nodes`` (the same forms)
    makes the handle joint while the node set changes: every grant needs a
    quorum of each list (doc/membership.md). ``options`` are the C library's
    options by their field names (``op_timeout_ms=50``, ``retry_count=3``,
    ``fencing=1``, ``tls_ca_file="ca.pem"`` ...); the others keep their
    defaults. Raises :class:`ConfigError` naming a bad URI or option.

    Any number of threads may share one handle. :meth:`close` (or leaving a
    ``with Redlock(...)`` block) frees it once no other call on it runs.
    """

    def __init__(self, nodes: Union[str, Sequence[str]], next_nodes: Union[None, str, Sequence[str]] = None,
                 **options: object):
        self._handle: Optional[int] = None
        nodes = _uri_list(nodes)
        room = _abi.OptionsRoom()
        _lib.redlock_options_init(ctypes.byref(room))
        opt = room.opt
        for name, value in options.items():
            _set_option(opt, name, value)
        uris = (ctypes.c_char_p * max(len(nodes), 1))(*[n.encode() for n in nodes])
        opt.nodes = ctypes.cast(uris, ctypes.POINTER(ctypes.c_char_p))
        opt.n_nodes = len(nodes)
        if next_nodes is not None:
            nexts = _uri_list(next_nodes)
            next_uris = (ctypes.c_char_p * max(len(nexts), 1))(*[n.encode() for n in nexts])
            opt.next_nodes = ctypes.cast(next_uris, ctypes.POINTER(ctypes.c_char_p))
            opt.n_next_nodes = len(nexts)
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(256)
        rc = _lib.redlock_new_ex(ctypes.byref(out), ctypes.byref(room), err, len(err))
        if rc != 0:
            raise _error(rc, Report(result=rc, message=_text(err.value)))
        self._handle = out.value
        self._nodes = tuple(nodes)

    def _live(self) -> int:
        if self._handle is None:
            raise _refuse(InvalidArgument, "the Redlock handle is closed")
        return self._handle

    def _take(self, fn, resource: str, args: tuple, ttl_ms: int) -> Lock:
        out = ctypes.c_void_p()
        rep = _abi.Report()
        _check(fn(self._live(), _bytes("resource", resource), *args, ctypes.byref(out), ctypes.byref(rep)), rep)
        return Lock(self, out, ttl_ms)

    def acquire(self, resource: str, ttl: float = 10.0, wait: Optional[float] = 0.0) -> Lock:
        """Acquires ``resource`` for ``ttl`` seconds, waiting up to ``wait``
        seconds for a holder to let go (0: one attempt; None: no time bound,
        the ``retry_count`` retries). Returns the :class:`Lock`, also a
        context manager. Raises :class:`Taken`, :class:`NoQuorum` or another
        :class:`Error`."""
        ms = _ms("ttl", ttl)
        return self._take(_lib.redlock_acquire_ex, resource, (ms, _wait_ms(wait)), ms)

    def lock(self, resource: str, ttl: float = 10.0, wait: Optional[float] = 0.0) -> Lock:
        """The same as :meth:`acquire`, named for ``with rl.lock(...) as lk:``."""
        return self.acquire(resource, ttl, wait)

    def semaphore(self, resource: str, limit: int, ttl: float = 10.0, wait: Optional[float] = 0.0) -> Lock:
        """Acquires one of ``limit`` permits of the semaphore ``resource``
        (1..64; every holder must use the same limit). The Lock's ``slot``
        says which. Raises :class:`Taken` when every permit is held."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 64:
            raise _refuse(InvalidArgument, f"limit must be an int in 1 .. 64, not {limit!r}")
        ms = _ms("ttl", ttl)
        return self._take(_lib.redlock_acquire_permit, resource, (limit, ms, _wait_ms(wait)), ms)

    def reader(self, resource: str, ttl: float = 10.0, wait: Optional[float] = 0.0) -> Lock:
        """Acquires a reader's lock of ``resource``: readers share it, and a
        writer is an ordinary :meth:`lock` of the same name. Raises
        :class:`Taken` while a writer holds it or waits for it."""
        ms = _ms("ttl", ttl)
        return self._take(_lib.redlock_acquire_shared, resource, (ms, _wait_ms(wait)), ms)

    def adopt(self, resource: str, token: str, ttl: float = 10.0) -> Lock:
        """Takes over a lock another process acquired, from its resource and
        token (e.g. printed by ``redlock acquire``). Raises :class:`NotHeld`
        when the token no longer holds it."""
        ms = _ms("ttl", ttl)
        return self._take(_lib.redlock_lock_adopt, resource, (_bytes("token", token), ms), ms)

    def fenced_set(self, key: str, value: str, fence: int) -> None:
        """Writes ``value`` to ``key`` on this handle's nodes (a store, not
        the lock nodes) only if ``fence`` is at least the highest fencing
        token the store has seen for ``key``; raises :class:`Stale` if not."""
        if isinstance(fence, bool) or not isinstance(fence, int) or not 0 < fence < 2**64:
            raise _refuse(InvalidArgument, f"fence must be a positive int below 2**64, not {fence!r}")
        if not isinstance(value, str):
            raise _refuse(InvalidArgument, f"value must be a str, not {value!r}")
        rep = _abi.Report()
        _check(_lib.redlock_fenced_set(self._live(), _bytes("key", key), value.encode(), fence, ctypes.byref(rep)),
               rep)

    def cancel_waits(self) -> None:
        """Ends every wait of this handle's acquires at once: each raises
        :class:`Cancelled`. Safe from any thread."""
        if self._handle is not None:
            _lib.redlock_cancel_waits(self._handle)

    @property
    def nodes(self) -> tuple:
        """The node URIs, as given."""
        return self._nodes

    def close(self) -> None:
        """Frees the handle and its connections, once no other call on it
        runs. Locks still held are not released: they expire by their TTL."""
        handle, self._handle = self._handle, None
        if handle is not None:
            _lib.redlock_free(handle)

    def __enter__(self) -> "Redlock":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self.close()
