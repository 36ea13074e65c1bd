#!/usr/bin/env python3
"""check_programs.py CC SOURCE_DIR LIBREDLOCK [CXX] -- every complete C and
C++ program in README.md and doc/*.md compiles and links, and every Python
block parses.

A complete program is a ```c or ```cpp block that defines main(). A C one is
compiled with -std=c11 -Wall -Wextra -Wpedantic -Werror against include/ and
linked with LIBREDLOCK (the built shared library), plus libuv or libevent
when it includes their adapter (flags from pkg-config); a C++ one with CXX,
-std=c++17 and the same warnings (no CXX: it fails, naming g++). A ```python
block must be valid Python (compile()). A block right after a line
`<!-- examples/NAME.c -->` (or `.cpp`) must also be that file, byte for byte,
so the docs show the program the tests run. Prints each program's result;
exits 1 if any failed, or if no program was found."""
import glob
import os
import re
import subprocess
import sys
import tempfile

cc, src, lib = sys.argv[1], sys.argv[2], sys.argv[3]
cxx = sys.argv[4] if len(sys.argv) > 4 else ""
pages = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "doc", "*.md")))
BLOCK = re.compile(r"(?:<!-- (examples/[\w.-]+\.(?:c|cpp|py)) -->\n)?```(c|cpp|python)\n(.*?)```", re.S)


def pkg(name):
    p = subprocess.run(["pkg-config", "--cflags", "--libs", name], capture_output=True, text=True)
    return p.stdout.split() if p.returncode == 0 else None


failures, count = [], 0
with tempfile.TemporaryDirectory() as tmp:
    for page in pages:
        text = open(page).read()
        for m in BLOCK.finditer(text):
            example, lang, code = m.group(1), m.group(2), m.group(3)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{os.path.relpath(page, src)}:{line}"
            if example:
                with open(os.path.join(src, example)) as f:
                    if f.read() != code:
                        failures.append(f"{where}: differs from {example}")
            if lang == "python":
                try:
                    compile(code, where, "exec")
                except SyntaxError as e:
                    failures.append(f"{where}: Python block does not parse: {e}")
                continue
            if not re.search(r"^int main\(", code, re.M):
                continue
            count += 1
            if lang == "cpp":
                if not cxx:
                    failures.append(f"{where}: a C++ program, and no C++ compiler was found (install g++)")
                    continue
                cpp_file = os.path.join(tmp, f"prog{count}.cpp")
                with open(cpp_file, "w") as f:
                    f.write(code)
                cmd = [cxx, "-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I", os.path.join(src, "include"),
                       cpp_file, "-o", os.path.join(tmp, f"prog{count}"), lib, "-Wl,-rpath," + os.path.dirname(lib)]
                p = subprocess.run(cmd, capture_output=True, text=True)
                print(f"{where}: {example or 'C++ program'}: {'ok' if p.returncode == 0 else 'FAILED'}")
                if p.returncode != 0:
                    failures.append(f"{where}: does not compile and link:\n{p.stderr}")
                continue
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
