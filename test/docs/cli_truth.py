#!/usr/bin/env python3
"""cli_truth.py REDLOCK SOURCE_DIR -- the redlock tool has one truth.

Its --help text, its man page (doc/redlock.1) and its guide (doc/cli.md)
must name the same long and short options, the same subcommands and the
same exit codes; and the tool must exit with the code all three give for
a bad --limit and for --shared with --limit or --fencing (64, a usage
error). Prints every difference it finds and exits 1 if there is one."""
import os
import re
import subprocess
import sys

redlock, src = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def run(*args, env_nodes="redis://127.0.0.1:1"):
    env = dict(os.environ, REDLOCK_NODES=env_nodes)
    p = subprocess.run([redlock, *args], capture_output=True, text=True, env=env, timeout=30)
    return p.returncode, p.stdout, p.stderr


rc, help_text, _ = run("--help")
check(rc == 0, f"--help exits {rc}, not 0")
rc, help2, _ = run("help")
check(rc == 0 and help2 == help_text, "`redlock help` does not print the --help text with exit 0")

man = open(os.path.join(src, "doc/redlock.1")).read().replace("\\-", "-")
guide_all = open(os.path.join(src, "doc/cli.md")).read()
# the guide's prose and tables (its example scripts may pass options to other programs)
guide = "\n".join(l for i, l in enumerate(re.split(r"(?m)^```.*$", guide_all)) if i % 2 == 0)
guide_spans = " ".join(re.findall(r"`([^`]*)`", guide))

LONG = re.compile(r"--[a-z][a-z-]*[a-z]")
sets = {
    "--help": set(LONG.findall(help_text)),
    "redlock.1": set(LONG.findall(man)),
    "doc/cli.md": set(LONG.findall(guide_spans)),
}
every = set().union(*sets.values())
for name, found in sets.items():
    missing = sorted(every - found)
    check(not missing, f"{name} lacks the options {' '.join(missing)}")
check(len(every) >= 20, f"only {len(every)} long options found: the parsing is broken")

for short, long_ in (("-v", "--verbose"), ("-h", "--help"), ("-V", "--version")):
    check(re.search(rf"(?m)^\s*{short}, {long_}", help_text), f"--help lacks {short}, {long_}")
    check(re.search(rf"\.BR {short} \", \" {long_}", man), f"redlock.1 lacks {short}, {long_}")
    check(f"`{short}`" in guide, f"doc/cli.md lacks `{short}`")

for cmd in ("exec", "acquire", "extend", "release", "status", "ping", "stats", "membership", "help"):
    check(re.search(rf"(?m)^  {cmd}\s", help_text), f"--help does not describe the subcommand {cmd}")
    check(re.search(rf"(?m)^\.B {cmd}$", man), f"redlock.1 does not describe the subcommand {cmd}")
    check(re.search(rf"redlock( \[GLOBAL OPTIONS\])? .*\b{cmd}\b|`{cmd}`", guide), f"doc/cli.md lacks {cmd}")

# exit codes: the --help list, the man page's EXIT STATUS, the guide's table
def codes(text):
    found = set()
    for a, b in re.findall(r"\b(\d{1,3})(?:-(\d{1,3}))?\b", text):
        found.add(f"{a}-{b}" if b else a)
    return found

help_exit = help_text.split("Exit status:")[1].split("status exits")[0]
help_codes = codes("\n".join(re.findall(r"(?m)^  (\d[\d, -]*?)\s{2}", help_exit)))
man_exit = man.split(".SH EXIT STATUS")[1].split(".SH")[0]
man_codes = codes("\n".join(re.findall(r"(?m)^\.B ([\d, -]+)$", man_exit)))
guide_table = guide.split("Exit codes, in the `sysexits.h` style")[1].split("\n\n")[1]
guide_codes = codes("\n".join(re.findall(r"(?m)^\| ([\d, -]+) \|", guide_table)))
expected = {"0", "1-255", "64", "69", "70", "71", "75", "78", "79", "80", "126", "127", "130", "143"}
for name, found in (("--help", help_codes), ("redlock.1", man_codes), ("doc/cli.md", guide_codes)):
    check(found == expected, f"{name} lists the exit codes {sorted(found)}, not {sorted(expected)}")

# the 64 line of each names a bad --limit and --shared with --limit
help64 = re.search(r"(?ms)^  64 (.*?)^  69", help_exit).group(1)
man64 = re.search(r"(?ms)^\.B 64$(.*?)^\.TP", man_exit).group(1)
guide64 = re.search(r"(?m)^\| 64 \|(.*)$", guide_table).group(1)
for name, text in (("--help", help64), ("redlock.1", man64), ("doc/cli.md", guide64)):
    flat = " ".join(text.split())
    check("--limit" in flat and "--shared" in flat, f"{name}'s exit code 64 does not name --limit and --shared")
check("exit 2" not in man.split(".SH STEPS")[0], "redlock.1 still gives exit 2 for an exec usage error")

# and the tool does what the three say
for args in (("--limit", "0"), ("--limit", "65"), ("--limit", "x"), ("--limit", "2", "--shared"),
             ("--shared", "--limit", "2"), ("--shared", "--fencing")):
    rc, _, err = run("exec", *args, "res", "--", "true")
    check(rc == 64, f"redlock exec {' '.join(args)} exits {rc}, not 64 ({err.strip()})")
    check(err.strip() != "", f"redlock exec {' '.join(args)} says nothing on stderr")

for f in failures:
    print("FAIL:", f)
print(f"{len(every)} long options, {len(expected)} exit codes checked: {len(failures)} difference(s)")
sys.exit(1 if failures else 0)
