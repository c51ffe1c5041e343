# ISA dispatch and rounding mode, process-wide and per thread.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

def get_isa():
    return mlipy_get_isa()


def set_isa(int isa):
    """Force an instruction-set path (0 scalar, 1 AVX2, 2 AVX-512 VNNI; -1 = best).
    Returns the path now in use, or -1 when the CPU lacks the one asked for."""
    return mlipy_set_isa(isa)


def isa_supported(int isa):
    return bool(mlipy_isa_supported(isa))


def isa_name(int isa):
    return mlipy_isa_name(isa).decode()


def set_rounding(int up):
    mlipy_set_rounding(MLIPY_ROUND_UP if up else MLIPY_ROUND_CONVERGENT)


def get_rounding():
    """The mode a call started now on this thread would use (0 / 1)."""
    return <int>mlipy_get_rounding()


def set_thread_rounding(int mode):
    """Override the process default for this thread (-1: no override)."""
    mlipy_set_thread_rounding(mode)


def get_thread_rounding():
    return mlipy_get_thread_rounding()
