"""The C interface of libredlock.so.0 as ctypes sees it: the struct mirrors,
the constants and the function prototypes, all in this one module.

The mirrors must match include/redlock.h field for field. The tests
(tests/test_abi.py) compile a C program from these very mirrors and compare
every size and offset with the compiler's, and compare the field names with
the header's, so a field added to a C struct fails them until it is added
here too."""
import ctypes
import os
from ctypes import (POINTER, c_char, c_char_p, c_double, c_int, c_int64, c_size_t, c_uint, c_uint32, c_uint64,
                    c_void_p)

MAX_NODES = 64
TOKEN_LEN = 40

# Return codes (include/redlock.h, REDLOCK_ERRNO_MAP): name -> value.
ERRORS = {
    "OK": 0, "INVALID": -1, "CONFIG": -2, "NOMEM": -3, "TAKEN": -4, "NO_QUORUM": -5, "EXPIRED": -6,
    "NOT_HELD": -7, "AUTH": -8, "IO": -9, "TIMEOUT": -10, "SERVER": -11, "STALE": -12, "QUARANTINED": -13,
    "CANCELLED": -14, "DEADLOCK": -15, "SUSPECT": -16, "REPLICATION": -17, "MEMBERSHIP": -18,
}


class Options(ctypes.Structure):
    """redlock_options_t."""
    _fields_ = [
        ("nodes", POINTER(c_char_p)),
        ("n_nodes", c_size_t),
        ("connect_timeout_ms", c_uint32),
        ("op_timeout_ms", c_uint32),
        ("drift_factor", c_double),
        ("drift_min_ms", c_uint32),
        ("retry_count", c_uint32),
        ("retry_delay_ms", c_uint32),
        ("retry_jitter_ms", c_uint32),
        ("node_down_ms", c_uint32),
        ("reconnect_min_ms", c_uint32),
        ("reconnect_max_ms", c_uint32),
        ("max_inflight", c_uint32),
        ("log", c_void_p),
        ("log_arg", c_void_p),
        ("log_level", c_int),
        ("reentrant", c_int),
        ("tls_ca_file", c_char_p),
        ("tls_ca_dir", c_char_p),
        ("tls_cert_file", c_char_p),
        ("tls_key_file", c_char_p),
        ("tls_verify_peer", c_int),
        ("tls_server_name", c_char_p),
        ("fencing", c_int),
        ("max_ttl_ms", c_uint32),
        ("quarantine", c_int),
        ("clock_jump_ms", c_uint32),
        ("clock_check_ms", c_uint32),
        ("stats", c_int),
        ("probe_min_ms", c_uint32),
        ("probe_max_ms", c_uint32),
        ("grace_rtts", c_uint32),
        ("min_replicas", c_uint32),
        ("next_nodes", ctypes.POINTER(c_char_p)),
        ("n_next_nodes", c_size_t),
        ("lock_delay_ms", c_uint32),
    ]


class OptionsRoom(ctypes.Union):
    """Options with room behind them: redlock_options_init() of a later
    library, whose struct has more fields at its end, fills those with their
    defaults here instead of writing past the mirror."""
    _fields_ = [("opt", Options), ("_room", c_char * 4096)]


class NodeReport(ctypes.Structure):
    """redlock_node_report_t."""
    _fields_ = [
        ("node", c_char_p),
        ("vote", c_int),
        ("err", c_int),
        ("rtt_us", c_int64),
        ("detail", c_char * 256),
        ("address", c_char * 72),
        ("lists", ctypes.c_uint),
    ]


class ListTally(ctypes.Structure):
    """redlock_list_tally_t: one node list's count in a joint handle's report."""
    _fields_ = [
        ("n_nodes", c_size_t),
        ("quorum", c_size_t),
        ("yes", c_size_t),
        ("no", c_size_t),
        ("failed", c_size_t),
    ]


class Report(ctypes.Structure):
    """redlock_report_t."""
    _fields_ = [
        ("result", c_int),
        ("attempts", c_uint32),
        ("n_nodes", c_size_t),
        ("quorum", c_size_t),
        ("yes", c_size_t),
        ("no", c_size_t),
        ("failed", c_size_t),
        ("elapsed_us", c_int64),
        ("validity_ms", c_int64),
        ("slot", c_int),
        ("message", c_char * 256),
        ("n_lists", c_size_t),
        ("lists", ListTally * 2),
        ("nodes", NodeReport * MAX_NODES),
    ]


# Each mirror, its C typedef and its struct tag, for the ABI test.
MIRRORS = [
    (Options, "redlock_options_t", "redlock_options"),
    (NodeReport, "redlock_node_report_t", "redlock_node_report"),
    (ListTally, "redlock_list_tally_t", "redlock_list_tally"),
    (Report, "redlock_report_t", "redlock_report"),
]

_report = POINTER(Report)

# name: (return type, argument types)
PROTOTYPES = {
    "redlock_options_init": (None, [c_void_p]),
    "redlock_new_ex": (c_int, [POINTER(c_void_p), c_void_p, c_char_p, c_size_t]),
    "redlock_free": (None, [c_void_p]),
    "redlock_acquire_ex": (c_int, [c_void_p, c_char_p, c_uint32, c_int64, POINTER(c_void_p), _report]),
    "redlock_acquire_permit": (c_int, [c_void_p, c_char_p, c_uint, c_uint32, c_int64, POINTER(c_void_p), _report]),
    "redlock_acquire_shared": (c_int, [c_void_p, c_char_p, c_uint32, c_int64, POINTER(c_void_p), _report]),
    "redlock_lock_adopt": (c_int, [c_void_p, c_char_p, c_char_p, c_uint32, POINTER(c_void_p), _report]),
    "redlock_extend_ex": (c_int, [c_void_p, c_void_p, c_uint32, _report]),
    "redlock_release_ex": (c_int, [c_void_p, c_void_p, _report]),
    "redlock_lock_free": (None, [c_void_p]),
    "redlock_cancel_waits": (None, [c_void_p]),
    "redlock_fenced_set": (c_int, [c_void_p, c_char_p, c_char_p, c_uint64, _report]),
    "redlock_lock_validity_ms": (c_int64, [c_void_p]),
    "redlock_lock_valid": (c_int, [c_void_p, c_uint32]),
    "redlock_lock_lost": (c_int, [c_void_p]),
    "redlock_lock_resource": (c_char_p, [c_void_p]),
    "redlock_lock_token": (c_char_p, [c_void_p]),
    "redlock_lock_slot": (c_int, [c_void_p]),
    "redlock_lock_fence": (c_uint64, [c_void_p]),
    "redlock_lock_is_shared": (c_int, [c_void_p]),
    "redlock_strerror": (c_char_p, [c_int]),
    "redlock_vote_name": (c_char_p, [c_int]),
}


def load() -> ctypes.CDLL:
    """Opens libredlock.so.0: the file LIBREDLOCK_LIBRARY names if it is set,
    else the one the dynamic loader finds; sets every prototype. A CDLL
    releases the GIL for the length of each call."""
    path = os.environ.get("LIBREDLOCK_LIBRARY") or "libredlock.so.0"
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        where = "LIBREDLOCK_LIBRARY" if os.environ.get("LIBREDLOCK_LIBRARY") else "the dynamic loader's search path"
        raise ImportError(f"libredlock: cannot load {path!r} (from {where}): {e}; install libredlock0 or set "
                          "LIBREDLOCK_LIBRARY to the library's path") from e
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
