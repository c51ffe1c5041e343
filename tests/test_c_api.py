"""The C core builds and runs from C alone (csrc/include only, no Python)."""
import glob
import shutil
import subprocess

import pytest

from conftest import ROOT

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


@pytest.mark.skipif(CC is None, reason="no C compiler on this machine")
def test_c_api_program(tmp_path):
    exe = tmp_path / "test_c_api"
    srcs = [str(ROOT / "csrc" / "test" / "test_c_api.c")] + sorted(glob.glob(str(ROOT / "csrc/src/**/*.c"), recursive=True))
    cmd = [CC, "-std=c11", "-O1", "-Wall", "-Wextra", "-Wconversion", "-Werror", "-I", str(ROOT / "csrc" / "include"), *srcs, "-lm",
           "-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    r = subprocess.run([str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "C API test passed" in r.stdout
    assert "prev_out" in r.stdout or "cell" in r.stdout
