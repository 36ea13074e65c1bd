"""The package's build backend (PEP 517), standard library only: it zips
libredlock/ into a pure-Python wheel, so that `pip install` needs neither
setuptools nor wheel nor a network. The version is libredlock.__version__."""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "libredlock"
SUMMARY = "Redlock distributed locks over N Redis masters: the libredlock C library from Python (ctypes)"


def _version():
    with open(os.path.join(ROOT, NAME, "__init__.py")) as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def _package_files():
    """(path in the wheel, path on disk) of every file of the package."""
    for name in sorted(os.listdir(os.path.join(ROOT, NAME))):
        if name.endswith(".py") or name == "py.typed":
            yield f"{NAME}/{name}", os.path.join(ROOT, NAME, name)


def _metadata():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\nSummary: {SUMMARY}\n"
            "License: BSD-3-Clause\nRequires-Python: >=3.8\n"
            "Classifier: License :: OSI Approved :: BSD License\n"
            "Description-Content-Type: text/markdown\n\n" + readme)


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(_metadata())
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel = f"{NAME}-{_version()}-py3-none-any.whl"
    record = []

    def add(zf, arcname, data):
        zf.writestr(arcname, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arcname},sha256={digest},{len(data)}")

    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, path in _package_files():
            with open(path, "rb") as f:
                add(zf, arcname, f.read())
        info = _dist_info()
        add(zf, f"{info}/METADATA", _metadata().encode())
        add(zf, f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: libredlock\nRoot-Is-Purelib: true\n"
                                 b"Tag: py3-none-any\n")
        add(zf, f"{info}/top_level.txt", f"{NAME}\n".encode())
        record.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{_version()}"
    with tarfile.open(os.path.join(sdist_directory, base + ".tar.gz"), "w:gz") as tf:
        for rel in ["pyproject.toml", "README.md", "_build/backend.py"] + [a for a, _ in _package_files()]:
            tf.add(os.path.join(ROOT, rel), f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return base + ".tar.gz"
