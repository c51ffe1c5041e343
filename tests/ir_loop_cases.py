"""The TensorIterator and Loop IRs of ../shared/vectors (ov_real, ov_ti_loop) that
run (not error or unsupported cases), and their inputs: shared by the tests of
the planned and compiled loop bodies (test_ir_lifted, test_ir_fast_loops)."""
import json

import numpy as np

from conftest import SHARED


def looped_cases():
    """[(folder, manifest entry)] of every case with a TensorIterator or Loop."""
    out = []
    for folder in ("ov_real", "ov_ti_loop"):
        path = SHARED / "vectors" / folder
        if not (path / "manifest.json").is_file():
            continue
        for c in json.loads((path / "manifest.json").read_text(encoding="utf-8"))["cases"]:
            ops = c.get("ops") or {}
            looped = any(k.startswith(("TensorIterator", "Loop")) for k in ops) \
                or c["name"].startswith(("ti_", "loop_"))
            if looped and c.get("category") not in ("error", "unsupported"):
                out.append((path, c))
    return out


def case_inputs(path, case):
    """{input name: array} of a case."""
    with np.load(path / f"{case['name']}.npz") as z:
        return {i["name"]: z[i["npz_key"]] for i in case["inputs"]}


def case_named(cases, name):
    """(folder, entry) of the case called `name` in `cases`; skips the test without it."""
    import pytest

    found = [(p, c) for p, c in cases if c["name"] == name]
    if not found:
        pytest.skip(f"{name} is not in the shared vectors")
    return found[0]


def record_plans(monkeypatch, planned=True):
    """The loop plans made from now on (None where `planned` is False: the loops
    are then stepped), in the order the models asked for them."""
    from mli.ir import lifted
    from mli.ir.ops import subgraph

    plans = []

    def plan_for(program, ti):
        p = lifted.plan_for(program, ti) if planned else None
        plans.append(p)
        return p
    monkeypatch.setattr(subgraph, "plan_for", plan_for)
    return plans
