"""The MLI HAR example's network as an IR model through to_fixed_point(scope="model")
with the example's formats as a plan file: every layer equals ``mli har``'s integers
(its library-LSTM layer 3), at the three bit depths."""

import numpy as np
import pytest

from conftest import SHARED
from mli.fixed_point import to_fixed_point
from mli.fixed_point.examples import HAR_LAYERS, har_kind, har_plan, write_har_ir
from mli.fixed_point.plan import Plan
from mli.ir import read_model

HAR = SHARED / "data" / "har"
pytestmark = pytest.mark.skipif(not (HAR / "model.json").is_file(),
                                reason=f"HAR example data not found at {HAR} (set MLI_SHARED)")


@pytest.mark.parametrize("depth", [16, 816, 8])
def test_har_network_layer_by_layer_equals_mli_har(depth, tmp_path):
    from mli.tools.har import load_har, quantize_input, run_har
    write_har_ir(tmp_path / "har.xml", depth, HAR)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["har.bin", "har.xml"]
    model = read_model(tmp_path / "har.xml")
    rng = np.random.default_rng(depth)
    xs = [rng.uniform(-1.5, 1.5, (128, 9)).astype(np.float32) for _ in range(2)]
    calibrated = to_fixed_point(model, {"x": xs[0][None]}, har_kind(depth), scope="model")
    har_plan(calibrated, depth, HAR).save(tmp_path / "plan.json")
    wm = to_fixed_point(model, {"x": xs[0][None]}, scope="model", plan=tmp_path / "plan.json")
    assert Plan.load(tmp_path / "plan.json").kind == har_kind(depth)
    hm = load_har(HAR, depth)
    for x in xs:
        xq = quantize_input(x, depth)
        ref = run_har(xq, depth, "library", model=hm)
        x_exact = xq.numpy().astype(np.float32) * np.float32(2.0 ** -xq.frac_bits)
        _, trace = wm.run({"x": x_exact[None]}, trace=True)
        for layer, key in HAR_LAYERS.items():
            want = ref[layer]
            assert wm.plan.tensors[key]["frac"] == want.frac_bits, layer
            assert trace[key].dtype == want.numpy().dtype, layer
            assert np.array_equal(trace[key].reshape(want.shape), want.numpy()), layer
