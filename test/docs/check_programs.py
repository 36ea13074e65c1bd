#!/usr/bin/env python3
"""check_programs.py CC SOURCE_DIR LIBREDLOCK -- every complete C program in
README.md and doc/*.md compiles and links.

A complete program is a ```c block that defines main(). Each is compiled
with -std=c11 -Wall -Wextra -Wpedantic -Werror against include/ and linked
with LIBREDLOCK (the built shared library), plus libuv or libevent when it
includes their adapter (flags from pkg-config). A block right after a line
`<!-- examples/NAME.c -->` must also be that file, byte for byte, so the
docs show the program the tests run. Prints each program's result; exits 1
if any failed, or if no program was found."""
import glob
import os
import re
import subprocess
import sys
import tempfile

cc, src, lib = sys.argv[1], sys.argv[2], sys.argv[3]
pages = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "doc", "*.md")))
BLOCK = re.compile(r"(?:<!-- (examples/[\w.-]+\.c) -->\n)?```c\n(.*?)```", re.S)


def pkg(name):
    p = subprocess.run(["pkg-config", "--cflags", "--libs", name], capture_output=True, text=True)
    return p.stdout.split() if p.returncode == 0 else None


failures, count = [], 0
with tempfile.TemporaryDirectory() as tmp:
    for page in pages:
        text = open(page).read()
        for m in BLOCK.finditer(text):
            example, code = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{os.path.relpath(page, src)}:{line}"
            if example:
                with open(os.path.join(src, example)) as f:
                    if f.read() != code:
                        failures.append(f"{where}: differs from {example}")
            if not re.search(r"^int main\(", code, re.M):
                continue
            count += 1
            extra = []
            for header, loop in (("uv.h", "libuv"), ("redlock/libuv.h", "libuv"), ("event2/", "libevent"),
                                 ("redlock/libevent.h", "libevent")):
                if header in code:
                    flags = pkg(loop)
                    if flags is None:
                        failures.append(f"{where}: needs {loop}, which pkg-config does not find")
                    extra += flags or []
            c_file = os.path.join(tmp, f"prog{count}.c")
            with open(c_file, "w") as f:
                f.write(code)
            cmd = [cc, "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I", os.path.join(src, "include"),
                   c_file, "-o", os.path.join(tmp, f"prog{count}"), lib, "-Wl,-rpath," + os.path.dirname(lib)]
            p = subprocess.run(cmd + sorted(set(extra), key=extra.index), capture_output=True, text=True)
            status = "ok" if p.returncode == 0 else "FAILED"
            print(f"{where}: {example or 'program'}: {status}")
            if p.returncode != 0:
                failures.append(f"{where}: does not compile and link:\n{p.stderr}")
for f in failures:
    print("FAIL:", f)
if count == 0:
    print("FAIL: no complete program found: the parsing is broken")
print(f"{count} complete program(s) in {len(pages)} page(s): {len(failures)} failure(s)")
sys.exit(1 if failures or count == 0 else 0)
