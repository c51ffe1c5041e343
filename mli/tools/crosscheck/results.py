"""What a crosscheck returns: per layer, per vector and per data set, with
the one-line summaries the command prints."""
from dataclasses import dataclass, field
from typing import Optional

from ...metrics import Report


@dataclass
class LayerResult:
    """One compared output: ``name`` (layer, or ``LAYER.cell``), ``kernel``,
    ``report`` in the primary rounding mode and ``alt`` in the other one."""

    name: str
    kernel: str
    report: Report
    alt: Optional[Report] = None
    alt_rounding: Optional[str] = None

    @property
    def bit_exact(self):
        return self.report.bit_exact

    def diagnosis(self):
        if self.bit_exact:
            return "bit-exact"
        if self.alt is not None and self.alt.bit_exact:
            return f"bit-exact with rounding '{self.alt_rounding}'"
        if self.alt is not None:
            return f"differs in both rounding modes ({self.alt.n_diff} elements with '{self.alt_rounding}')"
        return "differs"

    def to_dict(self):
        d = {"name": self.name, "kernel": self.kernel, "bit_exact": self.bit_exact,
             "diagnosis": self.diagnosis(), "report": self.report.to_dict()}
        if self.alt is not None:
            d["alt_rounding"] = self.alt_rounding
            d["alt_bit_exact"] = self.alt.bit_exact
            d["alt_n_diff"] = self.alt.n_diff
            d["alt_where"] = self.alt.where()
        return d


@dataclass
class CrosscheckResult:
    """All compared outputs of one vector.  ``bit_exact`` when every output
    matches in the primary rounding mode; ``alt_bit_exact`` when every
    output matches in the other mode."""

    layers: list
    rounding: str = "convergent"
    alt_rounding: Optional[str] = None
    label: str = ""
    isolate: bool = False
    chained: bool = True      # layers fed from each other in the package run (case files)
    notes: list = field(default_factory=list)

    @property
    def bit_exact(self):
        return all(r.bit_exact for r in self.layers)

    @property
    def alt_bit_exact(self):
        if self.alt_rounding is None:
            return None
        return all(r.alt is not None and r.alt.bit_exact for r in self.layers)

    @property
    def first_mismatch(self):
        return next((r for r in self.layers if not r.bit_exact), None)

    def diagnosis(self):
        if self.bit_exact:
            return f"bit-exact ({len(self.layers)} output{'s' * (len(self.layers) != 1)}, rounding {self.rounding})"
        if self.alt_bit_exact:
            return (f"MISMATCH with rounding '{self.rounding}', but bit-exact with rounding '{self.alt_rounding}': "
                    f"the firmware's DSP rounding mode is '{self.alt_rounding}' (MLI 1.1 is built with "
                    "-Xdsp_ctrl=...,convergent)")
        fm = self.first_mismatch
        text = f"MISMATCH: first in {fm.name} ({fm.kernel}) at {fm.report.where()}"
        if self.alt_rounding is not None:
            text += "; not explained by the rounding mode" if not (fm.alt and fm.alt.bit_exact) else \
                f"; {fm.name} matches with rounding '{self.alt_rounding}'"
        later = [r.name for r in self.layers[self.layers.index(fm) + 1:] if not r.bit_exact]
        if later:
            text += f"; later mismatches ({', '.join(later)}) may follow from it"
            if self.chained and not self.isolate:
                text += " (--isolate feeds each layer the firmware's own input)"
        return text

    def summary_line(self):
        """One line: bit-exact, or where the first mismatch is."""
        head = f"vector {self.label}: " if self.label != "" else ""
        if self.bit_exact:
            n = len(self.layers)
            return head + f"bit-exact ({n} output{'' if n == 1 else 's'})"
        fm = self.first_mismatch
        r = fm.report
        line = (f"{head}MISMATCH {fm.name}: {r.n_diff}/{r.count} differ, first at {r.where()} "
                f"(firmware {r.first_firmware}, package {r.first_package}), max {r.max_abs_diff} LSB")
        if self.alt_bit_exact:
            line += f"; bit-exact with rounding '{self.alt_rounding}'"
        return line

    def format(self):
        lines = []
        if self.label != "":
            lines.append(f"vector {self.label}")
        lines.append(f"rounding {self.rounding}" + (f" (also tried {self.alt_rounding})" if self.alt_rounding else "")
                     + (", isolated layers" if self.isolate else ""))
        for r in self.layers:
            lines.append(f"{r.name} [{r.kernel}, {list(r.report.shape)}]: {r.diagnosis()}")
            lines.append(r.report.format(indent="    "))
            if r.alt is not None and not r.bit_exact and not r.alt.bit_exact:
                lines.append(f"    with rounding '{r.alt_rounding}': {r.alt.summary()}")
        lines += [f"note: {n}" for n in self.notes]
        lines.append(self.diagnosis())
        return "\n".join(lines)

    def to_dict(self):
        return {"label": self.label, "bit_exact": self.bit_exact, "rounding": self.rounding,
                "alt_rounding": self.alt_rounding, "alt_bit_exact": self.alt_bit_exact,
                "isolate": self.isolate, "diagnosis": self.diagnosis(),
                "first_mismatch": self.first_mismatch.name if self.first_mismatch else None,
                "layers": [r.to_dict() for r in self.layers], "notes": list(self.notes)}


@dataclass
class DatasetResult:
    """Results of a data-set run, one :class:`CrosscheckResult` per vector."""

    results: list

    @property
    def bit_exact(self):
        return all(r.bit_exact for r in self.results)

    def summary(self):
        n = len(self.results)
        ok = sum(r.bit_exact for r in self.results)
        alt = sum(1 for r in self.results if not r.bit_exact and r.alt_bit_exact)
        s = f"{n} vectors: {ok} bit-exact, {n - ok} mismatch"
        if alt:
            s += f" ({alt} bit-exact with rounding '{self.results[0].alt_rounding}')"
        return s

    def format(self):
        return "\n".join([r.summary_line() for r in self.results] + [self.summary()])

    def to_dict(self):
        return {"bit_exact": self.bit_exact, "summary": self.summary(),
                "vectors": [r.to_dict() for r in self.results]}
