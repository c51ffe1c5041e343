"""Shared fixtures: where ../shared is, hypothesis profiles."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MLI_SHARED", ROOT.parent / "shared"))
MLI11 = SHARED / "vectors" / "mli11"
NEEDS_SHARED = pytest.mark.skipif(
    not MLI11.is_dir(), reason=f"reference data not found at {SHARED} (set MLI_SHARED; CI always has it)")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("ci", max_examples=200, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", max_examples=60, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
except ImportError:  # hypothesis is a test extra
    pass


def manifest_cases(folder, what):
    """(folder path, the cases of its manifest.json) of shared/vectors/`folder`;
    skips the calling test module, naming `what`, where the folder is absent."""
    import json

    path = SHARED / "vectors" / folder
    if not (path / "manifest.json").is_file():
        pytest.skip(f"{what} not found at {path} (set MLI_SHARED to the shared folder; CI always has it)",
                    allow_module_level=True)
    return path, json.loads((path / "manifest.json").read_text(encoding="utf-8"))["cases"]


def mli11_cases():
    return sorted(p.stem for p in MLI11.glob("*.npz")) if MLI11.is_dir() else []
