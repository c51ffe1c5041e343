"""From a program of MLI calls to firmware C that computes exactly the
goldens (``mli deploy``).

:func:`deploy_model` does it for an OpenVINO IR model converted whole to MLI 1.1
fixed point (its plan lowered to MLI calls by :mod:`mli.deploy.lower`);
:func:`deploy` for any :class:`~mli.deploy.program.Program`.

:func:`deploy` writes a self-contained folder for a
:class:`~mli.deploy.program.Program`:

``model.h`` / ``model.c``
    ``model_run(inputs..., outputs...)`` calling MLI 1.1's public API on
    ``mli_tensor`` s in one static arena (``model_arena``), weights as
    ``const`` arrays (``MODEL_WEIGHTS_ATTR`` / ``MODEL_ARENA_ATTR`` place
    them), ``model_reset_state()``; the arena size, the weights' size and
    each tensor's offset as macros.
``plan.json``
    The same plan for tools: every tensor's role, format, offset, size and
    lifetime, every step's call.
``golden.h`` / ``golden.c``
    A few inputs and every layer's integers for them, from the package's
    kernels (:meth:`Program.run`).
``check.c`` + ``Makefile``
    ``make check`` builds a host program that runs the goldens step by step
    on an arena filled with a pattern and prints ``bit-exact`` or the first
    differing layer, step and element; against the package's C core
    (:func:`mli.get_include`, :func:`mli.get_sources`) or, with
    ``MLI_INC=DIR MLI_LIB=FILE``, against another MLI 1.1 library.
``README.md``
    What the folder holds and how to build it.

Nothing is written when anything fails; a folder that is not empty is
refused unless ``force``, and even then only files that ``mli deploy``
wrote are replaced.
"""
from .folder import MARK, deploy, memory_report
from .model import deploy_model
from .program import DeployError, DeployTensor, Program, Step

__all__ = ["deploy", "deploy_model", "Program", "Step", "DeployTensor", "DeployError", "memory_report", "MARK"]
