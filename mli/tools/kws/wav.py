"""WAV reading as the KWS example does it (``wav_file_guard``), with clear
errors for files it would misread.

The example reads a fixed 44-byte header (little endian: ``RIFF``, size,
``WAVE``, ``fmt `` chunk of 16 bytes with format, channels, rate, byte
rate, block align and bits per sample, ``data``, data size), accepts 16 kHz
mono 16-bit PCM only, and then takes every pair of bytes from offset 44 to
the physical end of the file as one int16 sample: it never looks at the
chunk ids at 12 and 36 or at any size field, and it rejects a tag as "not a
WAV" only when all four of its bytes are wrong.

:func:`read_wav` has two rules:

``strict=True`` (the default, and ``mli kws``)
    Only the canonical files the example reads correctly: ``RIFF``,
    ``WAVE``, ``fmt `` of 16 bytes, 16 kHz mono 16-bit PCM with consistent
    byte rate and block align, ``data`` at byte 36, and a data size equal to
    what follows the header (a trailing odd byte is tolerated).  Anything
    else -- another chunk before or after the data (``LIST``, ``fact``), an
    extensible format header, a size that claims more or less than the file
    holds -- is refused with a one-line :class:`WavError` saying what was
    found.  The samples are those the example reads.
``strict=False`` (``mli kws --lenient-wav``)
    The example's own rule, exactly: only its two checks, then every byte
    pair after the header, whatever the header claims.

In both, sizes claimed by the header never decide what is allocated: the
file is read up to its real end, and at most :func:`mli.io.limits.max_array_bytes`
bytes (1 GiB unless ``MLI_MAX_ARRAY_BYTES`` says otherwise) are read from
any file, device or pipe.  Every problem is a :class:`WavError` (a
``ValueError``) naming the file; a file that cannot be opened raises the
``OSError`` of ``open``.
"""
import os
import struct
from collections import namedtuple

import numpy as np

from ...io.limits import SizeLimitError, read_bounded

HEADER_BYTES = 44
SAMPLE_RATE = 16000

# the example's own messages (wav_file_guard status -> text)
NOT_A_WAV = "Not a WAV file"
NOT_SUPPORTED = "Not supported WAV format"


class WavError(ValueError):
    """A WAV file the example cannot read, or (strict) would misread;
    ``strict_only`` is True when the example itself would read the file
    (``strict=False`` accepts it)."""

    def __init__(self, message, strict_only=False):
        super().__init__(message)
        self.strict_only = strict_only


#: the 44-byte header's fields (little endian: 4s I 4s 4s I H H I I H H 4s I)
WavHeader = namedtuple("WavHeader", "riff riff_size wave fmt fmt_size audio_format channels sample_rate "
                       "byte_rate block_align bits_per_sample data data_size")
_HEADER = struct.Struct("<4sI4s4sIHHIIHH4sI")


def _tag(b):
    return repr(b.decode("latin-1"))


def parse_header(raw, strict=True, file_bytes=None):
    """Check a 44-byte WAV header as :func:`read_wav` does.

    Parameters
    ----------
    raw : bytes
        The first 44 bytes of the file.
    strict : bool
        See the module docstring.
    file_bytes : int, optional
        The file's real length (strict: checked against the size fields).

    Returns
    -------
    WavHeader

    Raises
    ------
    WavError
        The message starts with the example's own words (``Not a WAV
        file``, ``Not supported WAV format``) where the example would refuse
        the file too, with what was found.
    """
    if len(raw) < HEADER_BYTES:
        raise WavError(f"{NOT_A_WAV}: {len(raw)} bytes, shorter than the {HEADER_BYTES}-byte WAV header")
    h = WavHeader(*_HEADER.unpack(bytes(raw[:HEADER_BYTES])))
    # the example rejects a tag only when every byte differs (its tests are ANDed)
    for name, want in (("riff", b"RIFF"), ("wave", b"WAVE")):
        got = getattr(h, name)
        example_refuses = all(a != b for a, b in zip(got, want))
        if example_refuses or (strict and got != want):
            raise WavError(f"{NOT_A_WAV}: expected {_tag(want)} at byte {0 if name == 'riff' else 8}, "
                           f"found {_tag(got)}", strict_only=not example_refuses)
    if strict and h.fmt != b"fmt ":
        raise WavError(f"{NOT_SUPPORTED}: expected the 'fmt ' chunk at byte 12, found {_tag(h.fmt)} "
                       "(the example reads only the canonical 44-byte header)", True)
    if strict and h.fmt_size != 16:
        raise WavError(f"{NOT_SUPPORTED}: 'fmt ' chunk of {h.fmt_size} bytes, the example reads only 16 "
                       "(plain PCM, no extension)", True)
    wrong = [f"{what} {got} (needs {want})" for what, got, want in (
        ("audio format", h.audio_format, 1), ("channels", h.channels, 1),
        ("bits per sample", h.bits_per_sample, 16), ("sample rate", h.sample_rate, SAMPLE_RATE)) if got != want]
    if wrong:
        raise WavError(f"{NOT_SUPPORTED}: " + ", ".join(wrong) + "; the example takes 16 kHz mono 16-bit PCM")
    if not strict:
        return h
    if h.byte_rate != 2 * SAMPLE_RATE or h.block_align != 2:
        raise WavError(f"{NOT_SUPPORTED}: byte rate {h.byte_rate}, block align {h.block_align} "
                       f"(16 kHz mono 16-bit PCM has {2 * SAMPLE_RATE}, 2)", True)
    if h.data != b"data":
        raise WavError(f"{NOT_SUPPORTED}: expected the 'data' chunk at byte 36, found {_tag(h.data)} "
                       "(another chunk before the samples; the example would read it as samples)", True)
    if file_bytes is not None:
        have = file_bytes - HEADER_BYTES
        if h.data_size % 2:
            raise WavError(f"'data' chunk of {h.data_size} bytes, an odd size for 16-bit samples", True)
        if h.data_size > have:
            raise WavError(f"'data' chunk claims {h.data_size} bytes, the file holds {have} after the header "
                           "(a truncated file)", True)
        if h.data_size < have - 1:
            raise WavError(f"'data' chunk claims {h.data_size} bytes, the file holds {have} after the header "
                           "(trailing bytes the example would read as samples)", True)
        if h.riff_size != file_bytes - 8 and h.riff_size != HEADER_BYTES - 8 + h.data_size:
            raise WavError(f"RIFF size {h.riff_size} does not match the file ({file_bytes} bytes, "
                           f"so {file_bytes - 8})", True)
    return h


def read_wav(path, strict=True):
    """The samples of a WAV file, as the example reads them.

    Parameters
    ----------
    path : str or path
    strict : bool
        True (default): refuse anything but the canonical files the example
        reads correctly; False: the example's own two checks only (see the
        module docstring).

    Returns
    -------
    ndarray of int16
        Every complete little-endian sample after the 44-byte header, up to
        the end of the file (a last odd byte is dropped).

    Raises
    ------
    WavError
        Not readable as the example reads it; the message names the file.
    OSError
        The file cannot be opened or read.
    """
    name = os.fspath(path)
    with open(name, "rb") as f:
        try:
            raw = read_bounded(f, name)
        except SizeLimitError as e:
            raise WavError(str(e)) from None
    try:
        parse_header(raw, strict, len(raw))
    except WavError as e:
        raise WavError(f"{name}: {e}", e.strict_only) from None
    body = memoryview(raw)[HEADER_BYTES:]
    n = len(body) // 2
    return np.frombuffer(body[:2 * n], "<i2").astype(np.int16)
