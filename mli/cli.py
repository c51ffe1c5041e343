"""The ``mli`` command: ``mli demo`` (the default), ``mli har``,
``mli crosscheck``, ``mli export-c``.  Exit codes: 0 success (bit-exact for
crosscheck), 1 mismatch, 2 usage or input error."""
import importlib
import sys

COMMANDS = {
    "demo": ("mli.demo", "quantize a seeded synthetic RNN and compare fx8 / fx16 / fx8w16d against float"),
    "har": ("mli.har", "run the MLI 1.1 HAR LSTM example exactly as its firmware does"),
    "crosscheck": ("mli.crosscheck", "compare firmware outputs with the package, bit for bit"),
    "export-c": ("mli.export_c", "write quantized weights and MLI tensor initialisers as C source"),
}


def usage():
    lines = ["usage: mli [COMMAND] [ARGS...]   (no command: mli demo)", "", "commands:"]
    lines += [f"  {name:<11} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "mli COMMAND --help gives the options of a command."]
    return "\n".join(lines)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    cmd = argv.pop(0) if argv and not argv[0].startswith("-") else "demo"
    if cmd not in COMMANDS:
        print(f"mli: unknown command {cmd!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[cmd][0])
    return module.main(argv)


if __name__ == "__main__":
    sys.exit(main())
