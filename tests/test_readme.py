"""The README as it is written: every code block and console example runs.

* ``python`` blocks run as scripts in a fresh folder whose ``../shared`` is
  the reference data (as from the project root), against the mli under test;
* blocks without a language are shell commands, run from the project root;
* ``console`` blocks are ``$ command`` lines followed by their output, which
  must match line for line (``...`` stands for any lines); ``echo $?`` gives
  the exit code of the command before.

An HTML comment right before a block, ``<!-- readme-test: skip (reason) -->``,
skips it with the reason (blocks not runnable by nature), and
``<!-- readme-test: needs ../shared -->`` (or a block that names
``../shared``) skips it when the reference data is absent (for commands,
which run from the root as written: when there is no ``../shared`` beside
the project).  ``mli`` and
``python`` in commands are this interpreter's."""
import os
import pathlib
import re
import stat
import subprocess
import sys

import pytest

import mli

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SHARED = pathlib.Path(os.environ.get("MLI_SHARED", ROOT.parent / "shared"))
PKG_PARENT = str(pathlib.Path(mli.__file__).resolve().parents[1])
_MARK = re.compile(r"<!--\s*readme-test:\s*(skip|needs)\s*(.*?)\s*-->")


def readme_blocks(text):
    """[(line number, language, body, marker or None)] of every fenced block."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mark = _MARK.search(lines[k]) if k >= 0 else None
        out.append((i + 1, m.group(1), "\n".join(lines[i + 1:j]) + "\n", mark))
        i = j + 1
    return out


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))


def _id(block):
    line, lang, body, _ = block
    return f"L{line}-{lang or 'shell'}"


def shell_commands(body):
    """Commands of a shell block: one per line, ``\\`` joins lines."""
    cmds, cur = [], ""
    for ln in body.splitlines():
        if not ln.strip() and not cur:
            continue
        cur += ln[:-1] + " " if ln.endswith("\\") else ln
        if not ln.endswith("\\"):
            cmds.append(cur.strip())
            cur = ""
    return cmds


def console_steps(body):
    """[(command, expected output lines)] of a console block."""
    steps, lines = [], body.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        assert ln.startswith("$ "), f"console block: output before any command: {ln!r}"
        cmd = ln[2:]
        while cmd.endswith("\\"):
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        steps.append((cmd, out))
    return steps


def matches(expected, actual):
    """Whether `actual` lines match `expected`, where a line ``...`` (also
    indented) stands for any number of lines (also none)."""
    if not expected:
        return not actual
    if expected[0].strip() == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


@pytest.fixture
def shims(tmp_path):
    """A bin folder first on PATH: `mli` and `python` are this interpreter."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # `mli` as pip's console script is: a script, so the folder it runs in is not on sys.path
    scripts = {"mli": f"#!{sys.executable}\nimport sys\nfrom mli.tools.cli import main\nsys.exit(main())\n",
               "python": f'#!/bin/sh\nexec "{sys.executable}" "$@"\n'}
    for name, text in scripts.items():
        p = bindir / name
        p.write_text(text)
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONPATH=PKG_PARENT,
               MLI_SHARED=str(SHARED), COLUMNS="80")
    env.pop("MLI_HAR_DATA", None)
    return env


def _skip_unless_runnable(block):
    line, lang, body, mark = block
    if mark and mark.group(1) == "skip":
        pytest.skip(f"README line {line}: {mark.group(2).strip('()') or 'marked skip'}")
    if (mark and mark.group(1) == "needs") or "../shared" in body:
        if lang == "python":   # runs where ../shared is SHARED
            if not (SHARED / "vectors").is_dir():
                pytest.skip(f"README line {line}: needs the reference data at {SHARED} (set MLI_SHARED)")
        elif not (ROOT.parent / "shared" / "vectors").is_dir():  # commands run from the root, as written
            pytest.skip(f"README line {line}: needs the reference data in ../shared beside the project")


def test_readme_has_blocks():
    langs = [lang for _, lang, _, _ in BLOCKS]
    assert langs.count("python") >= 2 and langs.count("console") >= 2 and "" in langs
    assert all(lang in ("python", "console", "") for lang in langs), langs


@pytest.mark.parametrize("block", BLOCKS, ids=[_id(b) for b in BLOCKS])
def test_readme_block(block, shims, tmp_path):
    _skip_unless_runnable(block)
    line, lang, body, _ = block
    if lang == "python":
        proj = tmp_path / "project"      # ../shared from here is the reference data, as from the root
        proj.mkdir()
        if SHARED.is_dir():
            (tmp_path / "shared").symlink_to(SHARED, target_is_directory=True)
        script = proj / "readme_block.py"
        script.write_text(body, encoding="utf-8")
        r = subprocess.run([sys.executable, str(script)], cwd=proj, env=shims, capture_output=True, text=True,
                           timeout=900)
        assert r.returncode == 0, f"README line {line}:\n{r.stderr}"
    elif lang == "":
        for cmd in shell_commands(body):
            r = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=shims, capture_output=True, text=True,
                               timeout=900)
            assert r.returncode == 0, f"README line {line}: {cmd}\n{r.stdout}\n{r.stderr}"
    else:
        last = 0
        for cmd, expected in console_steps(body):
            r = subprocess.run(["bash", "-c", f"(exit {last}); {cmd} 2>&1"], cwd=ROOT, env=shims,
                               capture_output=True, text=True, timeout=900)
            last = r.returncode
            actual = r.stdout.splitlines()
            assert matches(expected, actual), (f"README line {line}: {cmd}\nexpected:\n" + "\n".join(expected)
                                               + "\nactual:\n" + r.stdout + r.stderr)


# ------------------------------------------------------- the parser itself
def test_matches_with_ellipsis():
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "b"], ["a", "b"])
    assert matches(["..."], [])
    assert matches(["x", "  ...", "y"], ["x", "  a", "y"])
    assert not matches(["a", "...", "d"], ["a", "b", "c"])
    assert not matches(["a"], ["a", "b"])


def test_console_steps_and_shell_commands():
    assert console_steps("$ a \\\n    --b\nout 1\n...\n$ echo $?\n1\n") == [("a  --b", ["out 1", "..."]),
                                                                          ("echo $?", ["1"])]
    assert shell_commands("x && y\n\nz \\\n  --w\n") == ["x && y", "z    --w"]


def test_markers_found():
    marks = {line: (m.group(1), m.group(2)) for line, _, _, m in BLOCKS if m}
    assert ("skip", "(installs the package: .ci/run runs it from a clean clone)") in marks.values()
