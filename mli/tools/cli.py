"""The ``mli`` command: ``mli demo`` (the default), ``mli har``, ``mli kws``,
``mli crosscheck``, ``mli export-c``, ``mli vectors``, ``mli fixed-point``, ``mli deploy``;
``mli --version``.  Exit codes: 0 success (bit-exact for
crosscheck), 1 mismatch, 2 usage or input error, 130 interrupted (Ctrl-C:
one line ``mli COMMAND: interrupted`` on stderr, no traceback), 141 the
reader of stdout went away (``mli ... | head``: no message, as a program
killed by SIGPIPE)."""
import importlib
import os
import sys

COMMANDS = {
    "demo": ("mli.tools.demo", "quantize a seeded synthetic RNN and compare fx8 / fx16 / fx8w16d against float"),
    "har": ("mli.tools.har", "run the MLI 1.1 HAR LSTM example exactly as its firmware does"),
    "kws": ("mli.tools.kws", "run the MLI 1.1 keyword-spotting example on a WAV file as its firmware does"),
    "crosscheck": ("mli.tools.crosscheck", "compare firmware outputs with the package, bit for bit"),
    "export-c": ("mli.tools.export_c", "write quantized weights and MLI tensor initialisers as C source"),
    "vectors": ("mli.tools.vectors", "run reference cases (MLI cases, OpenVINO TensorIterator/Loop folders)"),
    "fixed-point": ("mli.tools.fixed_point", "run an OpenVINO IR model's cells on the MLI kernels, S/N against float"),
    "deploy": ("mli.tools.deploy", "write firmware C with a static memory plan, goldens and a host check"),
}


def usage():
    lines = ["usage: mli [COMMAND] [ARGS...]   (no command: mli demo)", "       mli --version", "",
             "commands:"]
    lines += [f"  {name:<12} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "mli COMMAND --help gives the options of a command."]
    return "\n".join(lines)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv and argv[0] in ("-V", "--version"):
        from .._version import __version__  # no need for the extension to say which version this is

        print(f"mli-py {__version__}")
        return 0
    cmd = argv.pop(0) if argv and not argv[0].startswith("-") else "demo"
    if cmd not in COMMANDS:
        print(f"mli: unknown command {cmd!r}\n\n{usage()}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(COMMANDS[cmd][0])
        return module.main(argv)
    except KeyboardInterrupt:
        print(f"mli {cmd}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 141


def _silence_stdout():
    """Point stdout at /dev/null: Python flushes it at exit, and a flush into
    the closed pipe would print 'Exception ignored ... BrokenPipeError'."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout replaced or without a descriptor
        pass


if __name__ == "__main__":
    sys.exit(main())
