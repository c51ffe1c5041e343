"""``mli fixed-point XML [--kind K]`` (also ``python -m mli.fixed_point``):
convert an OpenVINO IR model's LSTM/RNN/GRU layers to MLI fixed point,
calibrated on the inputs stored beside the case, and print the S/N of every
output against the float model.  The library is :mod:`mli.fixed_point`."""
import argparse
from pathlib import Path

import numpy as np

from ..fixed_point import to_fixed_point
from ..ir import read_model

__all__ = ["main"]


def _case_inputs(xml):
    npz = Path(xml).with_suffix(".npz")
    if not npz.is_file():
        raise SystemExit(f"{xml}: no {npz.name} beside it with the inputs (in__<name> arrays)")
    with np.load(npz, allow_pickle=False) as d:
        inputs = {k[4:]: d[k] for k in d.files if k.startswith("in__")}
    if not inputs:
        raise SystemExit(f"{npz}: no in__<name> arrays")
    return inputs


def main(argv=None) -> int:
    """``mli fixed-point XML [--kind K]``: frac bits and S/N per output."""
    ap = argparse.ArgumentParser(
        prog="mli fixed-point",
        description="Convert the LSTM/RNN/GRU layers of an OpenVINO IR model to MLI fixed "
                    "point, calibrating on the case's stored inputs (the .npz beside the "
                    ".xml), and print the S/N of every output against the float model.")
    ap.add_argument("xml", help="OpenVINO IR .xml (weights .bin and inputs .npz beside it)")
    ap.add_argument("--kind", choices=["fx16", "fx8w16d", "fx8", "all"], default="fx16",
                    help="MLI kernel variant (default fx16; 'all' runs the three)")
    args = ap.parse_args(argv)
    model = read_model(args.xml)
    inputs = _case_inputs(args.xml)
    kinds = ["fx16", "fx8w16d", "fx8"] if args.kind == "all" else [args.kind]
    print(f"{args.xml}: calibrated on its stored inputs {sorted(inputs)}")
    for kind in kinds:
        fpm = to_fixed_point(model, inputs, kind)
        print(f"\n[{kind}]")
        print(fpm.summary())
        for name, db in fpm.report(inputs).items():
            print(f"  S/N {name:<16} {db:7.2f} dB")
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
