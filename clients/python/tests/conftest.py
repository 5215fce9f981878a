"""Starts a real `seam up` on free ports for the tests, from a binary built
from this repository (or SEAM_BIN), and stops it afterwards."""

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..")))


@pytest.fixture(scope="session")
def seam_bin(tmp_path_factory):
    if os.environ.get("SEAM_BIN"):
        return os.environ["SEAM_BIN"]
    out = str(tmp_path_factory.mktemp("bin") / "seam")
    subprocess.run(["go", "build", "-o", out, "./cmd/seam"], cwd=ROOT, check=True)
    return out


@contextlib.contextmanager
def start_seam(seam_bin, data):
    """Runs seam up on free ports with its data in data: (base_url, token, data_dir)."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([seam_bin, "up", "--data-dir", data, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        addr = None
        deadline = time.monotonic() + 60
        while addr is None and time.monotonic() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError("seam up exited: " + log.read().decode(errors="replace"))
            log.seek(0)
            m = re.search(rb"http listening\S*\s.*?addr=(127\.0\.0\.1:\d+)", log.read())
            if m:
                addr = m.group(1).decode()
            else:
                time.sleep(0.1)
        if addr is None:
            raise RuntimeError("seam up did not say where it listens within 60s")
        with open(os.path.join(data, "admin.token")) as f:
            token = f.read().strip()
        yield "http://" + addr, token, data
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def seam(seam_bin, tmp_path_factory):
    """A running seam up shared by the session: (base_url, token, data_dir)."""
    with start_seam(seam_bin, str(tmp_path_factory.mktemp("seam-data"))) as s:
        yield s


@pytest.fixture
def fresh_seam(seam_bin, tmp_path_factory):
    """A seam up of its own, for a test that starts from nothing."""
    with start_seam(seam_bin, str(tmp_path_factory.mktemp("seam-data"))) as s:
        yield s
