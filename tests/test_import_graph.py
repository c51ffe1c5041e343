"""No import cycle inside the package: modules import downward only (STYLE.md).

The import graph is built from the sources with ``ast``, not by importing: every
``.py`` and ``.pyx`` under ``mli/`` is a module (``__init__.py`` is its package),
every ``import`` / ``from ... import`` in it -- at any depth, inside functions,
classes and ``if TYPE_CHECKING:`` blocks too -- is an edge to the module it names
inside ``mli`` (relative imports resolved).  ``from P import x`` is an edge to the
submodule ``P.x`` when ``P.x`` is a module or an extension, else to ``P``; importing
a submodule is not counted as an edge to its parent packages (``from . import _core``
in ``mli/kernels.py`` is an edge to ``mli._core``, not to ``mli/__init__.py``).
Cython files are read for their Python-level imports only (``cimport`` is
compile time).
"""
import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.numpy_only

PKG = Path(__file__).resolve().parent.parent / "mli"


def _module_name(path):
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules():
    """{dotted name: (path, is_package)} of every .py / .pyx module under mli/."""
    out = {}
    for path in sorted(PKG.rglob("*")):
        if path.suffix in (".py", ".pyx") and "__pycache__" not in path.parts:
            out[_module_name(path)] = (path, path.name == "__init__.py")
    return out


_PYX_IMPORT = re.compile(r"^[ \t]*(import[ \t]|from[ \t]+\S+[ \t]+import\b)")


def _pyx_import_nodes(text):
    """The Python-level import statements of a Cython source, parsed one by one (a
    statement that is not Python, such as a ``cimport`` or a docstring line that
    happens to start with "from", is skipped)."""
    lines = text.splitlines()
    nodes = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not _PYX_IMPORT.match(line) or re.search(r"\bcimport\b", line):
            i += 1
            continue
        stmt = [line.strip()]
        while (stmt[-1].endswith("\\") or "".join(stmt).count("(") > "".join(stmt).count(")")) \
                and i + 1 < len(lines):
            i += 1
            stmt.append(lines[i].strip())
        i += 1
        try:
            nodes += [n for n in ast.walk(ast.parse("\n".join(stmt)))
                      if isinstance(n, (ast.Import, ast.ImportFrom))]
        except SyntaxError:
            pass
    return nodes


_PYX_INCLUDE = re.compile(r"""^include[ \t]+["']([^"']+)["']""", re.M)


def _pyx_text(path):
    """A Cython source with its ``include`` files in place (the bridge's families
    are include files of mli/_core.pyx: their imports are the module's)."""
    text = path.read_text(encoding="utf-8")
    return _PYX_INCLUDE.sub(lambda m: _pyx_text(path.parent / m.group(1)), text)


def _import_nodes(path):
    if path.suffix == ".pyx":
        return _pyx_import_nodes(_pyx_text(path))
    text = path.read_text(encoding="utf-8")
    return [n for n in ast.walk(ast.parse(text, str(path)))
            if isinstance(n, (ast.Import, ast.ImportFrom))]


def import_graph():
    """{module: {imported module, ...}} over the modules of ``mli``."""
    mods = _modules()
    graph = {}
    for name, (path, is_pkg) in mods.items():
        here = name if is_pkg else name.rpartition(".")[0]      # the package `.` refers to
        edges = set()
        for node in _import_nodes(path):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in mods)
                continue
            if node.level:
                base = here.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "mli":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in mods:
                    edges.add(sub)
                elif target in mods:
                    edges.add(target)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan), each
    sorted, plus one concrete cycle through each for the message."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):                         # iterative Tarjan (no recursion limit)
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def _one_cycle(graph, comp):
    """A shortest cycle through the first module of a strongly connected component."""
    start, members = comp[0], set(comp)
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:                # back at the start: v's path from it, closed
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def test_graph_sees_the_package():
    g = import_graph()
    assert "mli" in g and "mli._core" in g and "mli.v2._core2" in g
    assert "mli._core" in g["mli.dispatch"]           # `from . import _core`: the extension
    assert "mli" not in g["mli.dispatch"]             # ... not mli/__init__.py
    assert "mli._core" in g["mli.graph.kernel_body"]  # `from .. import _core, kernels`
    assert "mli.ir.registry" in g["mli.ir.ops.recurrent"]
    # the bridge's include files are read as part of mli/_core.pyx
    core = _pyx_text(PKG / "_core.pyx")
    assert "cdef class CTensor" in core and "def float_rnn_sequence" in core and "\ninclude " not in core


def test_cycle_finder_names_the_modules():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": {"e"}}
    assert cycles(g) == [["a", "b", "c"], ["e", "e2"]]
    assert _one_cycle(g, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_no_import_cycle():
    g = import_graph()
    found = cycles(g)
    msg = "; ".join(f"{' -> '.join(_one_cycle(g, c))} (modules {', '.join(c)})" for c in found)
    assert not found, f"import cycles in mli/: {msg}"
