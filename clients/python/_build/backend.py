"""A PEP 517 build backend with no dependencies: it packs seam_client into a
wheel (and an sdist) with the standard library, so pip can build the client
offline and in an isolated environment without downloading setuptools."""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME, DIST, VERSION = "seam-client", "seam_client", "0.1.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "py3-none-any"

METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: A small typed client for Seam's REST API
Requires-Python: >=3.9
Provides-Extra: pandas
Requires-Dist: pandas; extra == "pandas"
"""


def _package_files():
    pkg = os.path.join(ROOT, DIST)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") or name == "py.typed":
            yield f"{DIST}/{name}", os.path.join(pkg, name)


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def _wheel(wheel_directory, files):
    info = f"{DIST}-{VERSION}.dist-info"
    name = f"{DIST}-{VERSION}-{TAG}.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        def add(arc, data):
            zf.writestr(arc, data)
            records.append(f"{arc},{_digest(data)},{len(data)}")

        for arc, data in files:
            add(arc, data)
        add(f"{info}/METADATA", METADATA.encode())
        add(f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: seam-backend\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode())
        records.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for arc, path in _package_files():
        with open(path, "rb") as f:
            files.append((arc, f.read()))
    return _wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(f"{DIST}.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = f"{DIST}-{VERSION}"
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tf:
        for rel in ["pyproject.toml", "README.md", "_build/backend.py"] + [a for a, _ in _package_files()]:
            path = os.path.join(ROOT, rel)
            if os.path.exists(path):
                tf.add(path, arcname=f"{base}/{rel}")
        data = METADATA.encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return name
