"""`pip install ./bindings/python` into a fresh venv with no package index
(--no-index), with build isolation and without, and the installed package
used from there."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import required_env


@pytest.mark.parametrize("isolation", [[], ["--no-build-isolation"]], ids=["isolated", "no-build-isolation"])
def test_pip_installs_the_package_into_a_fresh_venv(tmp_path, isolation):
    src = os.path.join(required_env("REDLOCK_SOURCE_DIR", "the source tree"), "bindings", "python")
    library = required_env("LIBREDLOCK_LIBRARY", "the built libredlock.so.0")
    # a copy, so that the build's leftovers (build/, *.egg-info) stay out of the source tree
    copy = tmp_path / "python"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__", "tests", "build", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    pip = subprocess.run([py, "-m", "pip", "install", *isolation, "--no-index", str(copy)], env=env,
                         capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    probe = ("import libredlock, os, sys\n"
             "print(os.path.dirname(libredlock.__file__))\n"
             "print(os.path.exists(os.path.join(os.path.dirname(libredlock.__file__), 'py.typed')))\n"
             "try:\n"
             "    libredlock.Redlock(['redis://127.0.0.1:notaport'])\n"
             "except libredlock.ConfigError as e:\n"
             "    print('ConfigError', e.code)\n")
    ran = subprocess.run([py, "-c", probe], env=dict(env, LIBREDLOCK_LIBRARY=library), capture_output=True,
                         text=True, cwd=str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    where, typed, error = ran.stdout.splitlines()
    assert where.startswith(str(venv)), where
    assert typed == "True"
    assert error == "ConfigError -2"
