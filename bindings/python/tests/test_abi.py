"""The struct mirrors of libredlock._abi against the C compiler and the
header: a C program made from the mirrors themselves prints every size and
offset, and the header's field lists are read, so a field added to or
moved in redlock_options_t, redlock_report_t or redlock_node_report_t fails
here until the mirror follows. Needs REDLOCK_CC (a C compiler) and
REDLOCK_SOURCE_DIR (for include/)."""
import ctypes
import os
import re
import subprocess
from typing import Dict, List, Tuple

import pytest

from libredlock import _abi
from conftest import required_env

Layout = Dict[str, Tuple[int, int]]  # "type" or "type.field" -> (offset, size)


def mirror_layout(mirror, c_name: str) -> Layout:
    out = {c_name: (0, ctypes.sizeof(mirror))}
    for name, _ in mirror._fields_:
        f = getattr(mirror, name)
        out[f"{c_name}.{name}"] = (f.offset, f.size)
    return out


def c_program(mirrors) -> str:
    """A C program printing the compiler's layout of the mirrored fields and the constants."""
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <redlock.h>", "int main(void) {"]
    for mirror, c_name, _ in mirrors:
        lines.append(f'    printf("{c_name} 0 %zu\\n", sizeof({c_name}));')
        for name, _ in mirror._fields_:
            lines.append(f'    printf("{c_name}.{name} %zu %zu\\n", offsetof({c_name}, {name}), '
                         f'sizeof((({c_name} *)0)->{name}));')
    for name in _abi.ERRORS:
        macro = "REDLOCK_OK" if name == "OK" else f"REDLOCK_ERR_{name}"
        lines.append(f'    printf("{macro} %d\\n", (int){macro});')
    lines += ['    printf("REDLOCK_MAX_NODES %d\\n", (int)REDLOCK_MAX_NODES);',
              '    printf("REDLOCK_TOKEN_LEN %d\\n", (int)REDLOCK_TOKEN_LEN);', "    return 0;", "}"]
    return "\n".join(lines) + "\n"


def compiler_output(mirrors, tmp_path) -> Dict[str, List[int]]:
    cc = required_env("REDLOCK_CC", "the C compiler")
    include = os.path.join(required_env("REDLOCK_SOURCE_DIR", "the source tree"), "include")
    src, exe = tmp_path / "layout.c", tmp_path / "layout"
    src.write_text(c_program(mirrors))
    built = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", include, str(src), "-o", str(exe)],
                           capture_output=True, text=True)
    assert built.returncode == 0, f"the layout program does not compile (a mirrored field the header lacks?):\n" \
                                  f"{built.stderr}"
    ran = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    return {w[0]: [int(x) for x in w[1:]] for w in (line.split() for line in ran.stdout.splitlines())}


def differences(mirrors, c: Dict[str, List[int]]) -> List[str]:
    out = []
    for mirror, c_name, _ in mirrors:
        for key, (offset, size) in mirror_layout(mirror, c_name).items():
            want = tuple(c[key]) if key != c_name else (0, c[key][1])
            if (offset, size) != want:
                out.append(f"{key}: the binding has offset {offset} size {size}, the compiler {want[0]} {want[1]}")
    return out


def header_fields(tag: str) -> List[str]:
    """The field names of `typedef struct TAG { ... }` in include/redlock.h, in order."""
    path = os.path.join(required_env("REDLOCK_SOURCE_DIR", "the source tree"), "include", "redlock.h")
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    m = re.search(r"typedef\s+struct\s+" + tag + r"\s*\{(.*?)\}\s*\w+\s*;", text, re.S)
    assert m, f"no typedef struct {tag} in {path}"
    names = []
    for decl in m.group(1).split(";"):
        decl = decl.strip()
        if not decl:
            continue
        for part in decl.split(","):
            part = re.sub(r"\[[^\]]*\]", "", part)
            names.append(re.findall(r"\w+", part)[-1])
    return names


def test_mirrors_match_the_compilers_sizes_and_offsets(tmp_path):
    c = compiler_output(_abi.MIRRORS, tmp_path)
    assert differences(_abi.MIRRORS, c) == []


def test_mirrors_name_the_headers_fields_in_order():
    for mirror, c_name, tag in _abi.MIRRORS:
        assert [n for n, _ in mirror._fields_] == header_fields(tag), f"{c_name} and its mirror differ"


def test_constants_match_the_header(tmp_path):
    c = compiler_output(_abi.MIRRORS, tmp_path)
    for name, value in _abi.ERRORS.items():
        assert c["REDLOCK_OK" if name == "OK" else f"REDLOCK_ERR_{name}"] == [value], name
    assert c["REDLOCK_MAX_NODES"] == [_abi.MAX_NODES]
    assert c["REDLOCK_TOKEN_LEN"] == [_abi.TOKEN_LEN]


def test_the_checks_see_fields_the_mirror_lacks(tmp_path):
    # what fields appended to redlock_options_t look like from a mirror that has not followed: two 4-byte
    # fields change the size; one may hide in the tail padding, and the header's field list shows it
    def without(n):
        return type("ShortOptions", (ctypes.Structure,), {"_fields_": _abi.Options._fields_[:-n]})
    mirrors = [(without(2), "redlock_options_t", "redlock_options")]
    found = differences(mirrors, compiler_output(mirrors, tmp_path))
    assert found and found[0].startswith("redlock_options_t: the binding has offset 0 size"), found
    assert [n for n, _ in without(1)._fields_] != header_fields("redlock_options")


def test_the_check_sees_a_moved_field(tmp_path):
    fields = list(_abi.NodeReport._fields_)
    fields[1], fields[2] = fields[2], fields[1]  # vote and err swapped: same types, same size
    swapped = type("SwappedNodeReport", (ctypes.Structure,), {"_fields_": fields})
    mirrors = [(swapped, "redlock_node_report_t", "redlock_node_report")]
    found = differences(mirrors, compiler_output(mirrors, tmp_path))
    assert any(d.startswith("redlock_node_report_t.vote") for d in found), found


def test_options_room_holds_a_larger_struct():
    # redlock_options_init() of a later library may write more fields: the room takes them
    assert ctypes.sizeof(_abi.OptionsRoom) >= 4 * ctypes.sizeof(_abi.Options)
    assert _abi.OptionsRoom.opt.offset == 0
