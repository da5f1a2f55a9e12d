"""The one reader of the package: a regular file's UTF-8 text, in bounded chunks, never blocking.

:func:`read_text_file` (re-exported by :mod:`replica_mlm._base.io`, the writing side) opens a file
without blocking, refuses anything but a regular file, and a file longer than its cap by its size
before reading it; it reads :data:`READ_CHUNK` bytes at a time, so its memory follows the text and
not the cap, and inflates gzip input no further than the cap. A leaf module: it imports nothing
of the package at import time (the memory check, :mod:`replica_mlm._base.limits`, when reading).
"""

from __future__ import annotations

import numbers
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["READ_CHUNK", "read_text_file"]


def _named(exc: OSError, path: Path, tmp: Path | None = None) -> OSError:
    """``exc`` naming ``path`` if it names no file (or only the temporary one); same class, errno."""
    if exc.errno is None or exc.filename not in (None, None if tmp is None else os.fspath(tmp)):
        return exc
    try:
        named = type(exc)(exc.errno, exc.strerror, os.fspath(path))
    except Exception:  # a subclass with another constructor
        named = OSError(exc.errno, exc.strerror, os.fspath(path))
    named.__cause__, named.__suppress_context__ = exc, True
    return named.with_traceback(exc.__traceback__)


_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


#: bytes :func:`read_text_file` reads (or inflates) at a time: its memory is the text's, never
#: ``max_bytes`` (a 5-residue file read with the default cap of 2 GiB allocates kilobytes)
READ_CHUNK = 1 << 20


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file ``path`` (non-blocking: a FIFO never hangs) and its stat."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise _named(exc, path)  # noqa: B904
    except ValueError:  # a NUL byte in the name: the system cannot even be asked
        raise ValueError(f"{os.fspath(path)!r} is no file name: it contains a NUL byte") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "a special file")
        raise ValueError(f"{path} is {kind}, not a regular file")
    return fd, info


def _too_long(path: Path, max_bytes: int, compressed: bool) -> ValueError:
    what = "decompresses to more than" if compressed else "is longer than"
    return ValueError(f"{path} {what} {max_bytes} bytes (no file the package writes, or a larger "
                      "max_bytes is needed)")


def _chunks(raw, path: Path, max_bytes: int, compressed: bool) -> Iterator[bytes]:
    """The bytes of ``raw`` (inflated if ``compressed``), :data:`READ_CHUNK` at a time, at most
    ``max_bytes + 1`` of them: inflating stops at the cap."""
    import gzip
    import zlib

    src = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
    size = 0
    try:
        while size <= max_bytes and (chunk := src.read(min(READ_CHUNK, max_bytes + 1 - size))):
            size += len(chunk)
            _allocation(2 * size, f"reading {path}")  # the bytes and their text
            yield chunk
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ValueError(f"{path} is not a readable gzip file ({exc})") from None


def _allocation(nbytes: int, what: str) -> None:
    """:func:`replica_mlm._base.limits.allocation` (imported when needed: io imports nothing of the
    package at import time)."""
    from replica_mlm._base.limits import allocation as check

    check(nbytes, what)


def read_text_file(path: str | os.PathLike, *, max_bytes: int, compressed: bool = False,
                   universal_newlines: bool = False) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``max_bytes`` long; never blocks.

    Opened with ``O_NONBLOCK`` and checked with ``fstat`` before a byte is read: a FIFO, a device
    (a link to ``/dev/zero``) or a folder is refused at once instead of hanging or filling the
    memory; so is a file longer than ``max_bytes`` (by its size, before reading it). The file is
    read :data:`READ_CHUNK` bytes at a time, so memory follows the text, not ``max_bytes`` (any
    int >= 1, ``2**64`` included), and a text the memory available cannot hold is refused as it
    grows. A leading UTF-8 byte order mark (spreadsheets write one; the package never does) is
    dropped, so a file reads the same with or without it.

    Parameters
    ----------
    compressed : bool
        The file is gzip-compressed: ``max_bytes`` bounds the inflated text, and inflating stops
        there (a "gzip bomb" costs at most ``max_bytes``; one whose trailer already declares more
        is refused before inflating).
    universal_newlines : bool
        Read CR LF and a lone CR as LF (files written on Windows or classic Mac OS).

    Raises
    ------
    ValueError
        Naming the file: not a regular file, longer than ``max_bytes``, too large for the memory
        available, not gzip (``compressed``) or not UTF-8; a name with a NUL byte.
    OSError
        If it cannot be opened or read (``FileNotFoundError``, ...), naming it.
    """
    path = Path(path)
    if not isinstance(max_bytes, numbers.Integral) or isinstance(max_bytes, bool) or max_bytes < 1:
        raise ValueError(f"max_bytes must be an int >= 1, got {max_bytes!r}")
    max_bytes = int(max_bytes)
    fd, info = _open_regular(path)
    with os.fdopen(fd, "rb", buffering=0) as raw:
        if not compressed and info.st_size > max_bytes:
            raise _too_long(path, max_bytes, compressed)
        if compressed and info.st_size >= 18:  # the gzip trailer: the last member's size mod 2^32
            raw.seek(-4, os.SEEK_END)
            if int.from_bytes(raw.read(4), "little") > max_bytes:
                raise _too_long(path, max_bytes, compressed)
            raw.seek(0)
        try:
            data = b"".join(_chunks(raw, path, max_bytes, compressed))
        except OSError as exc:
            raise _named(exc, path)  # noqa: B904
    if len(data) > max_bytes:
        raise _too_long(path, max_bytes, compressed)
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if universal_newlines else text


