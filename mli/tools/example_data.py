"""Where the data of MLI's examples (``shared/data/<name>``) is found: one
rule for ``mli har`` and ``mli kws``."""
import os

__all__ = ["candidate_dirs", "find_data_dir", "searched_places"]


def candidate_dirs(name):
    """Where ``shared/data/<name>`` may be, in the order they are tried."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../mli
    root = os.path.dirname(package)
    yield os.path.join(root, "..", "shared", "data", name)          # in-place build
    yield os.path.join(os.getcwd(), "..", "shared", "data", name)   # run from the project root
    yield os.path.join(os.getcwd(), "shared", "data", name)         # run beside shared/


def find_data_dir(name, env, candidates):
    """``$env``, else ``$MLI_SHARED/data/<name>``, else the first folder of
    ``candidates()`` that exists (else the first of them)."""
    if os.environ.get(env):
        return os.environ[env]
    if os.environ.get("MLI_SHARED"):
        return os.path.join(os.environ["MLI_SHARED"], "data", name)
    cands = [os.path.normpath(c) for c in candidates()]
    for c in cands:
        if os.path.isdir(c):
            return c
    return cands[0]


def searched_places(name, env, candidates):
    """The places :func:`find_data_dir` looked in, in order, as one line for a
    "not found" message: the variable it took, or (both unset) every folder."""
    if os.environ.get(env):
        return f"${env} ({os.environ[env]})"
    if os.environ.get("MLI_SHARED"):
        return f"$MLI_SHARED/data/{name} ({os.path.join(os.environ['MLI_SHARED'], 'data', name)})"
    return ", ".join(os.path.normpath(c) for c in candidates()) + f" (${env} and $MLI_SHARED unset)"
