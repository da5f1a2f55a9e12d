"""The protections of the equation cache (:mod:`.compiled_cache`): a private folder, safe reads, a key.

The cache holds Python source that :func:`.compiled_cache.load` compiles and runs, so whoever can
write into the cache folder could run code in every process that reads it. This module keeps the
folder the current user's own and lets the cache sign what it writes there:

* :func:`private_folder` creates the folder, and every parent it has to create, with mode
  ``0o700``, and refuses (:class:`UnsafeCache`) a folder that is a symbolic link, is not a
  directory, belongs to another user or is writable by its group or by others;
* :func:`read_private` reads a file without following a symbolic link or blocking (``O_NOFOLLOW |
  O_NONBLOCK``: a FIFO in place of the file does not hang the reader), checks what it opened
  (``fstat``: a regular file of the current user, not writable by group or others) and reads at
  most :data:`MAX_BYTES`;
* :func:`secret_key` is the per-user HMAC key: :data:`KEY_BYTES` random bytes (hex) in the file
  :data:`KEY_NAME` of the folder, created with mode ``0o600`` by
  :func:`replica_mlm._base.io.atomic_write_text` with ``exclusive=True`` (a temporary file opened
  ``O_CREAT | O_EXCL``, then hard-linked to its name, which fails if the name exists): of two
  processes creating it at once, one links its key and the other reads and uses that one; the key
  file is read with the same checks;
* :func:`mac` is the HMAC-SHA256 of a list of strings under that key.

On Windows (no ``os.getuid``) the owner and permission-bit checks are skipped: mode bits are
synthesised there from the read-only attribute and say nothing about who may write a file.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path

from replica_mlm._base import io

#: the most a cache file may hold (bytes); a larger file is not read (and gets rewritten)
MAX_BYTES = 64 * 2**20
#: name of the key file in the cache folder, and the length of the key (bytes)
KEY_NAME = "hmac-key"
KEY_BYTES = 32
#: the owner and the permission bits are checked where there are users (not on Windows)
_POSIX = hasattr(os, "getuid")
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


class CacheWarning(UserWarning):
    """The equation cache is not used, because its folder or one of its files is not safe."""


class UnsafeCache(Exception):
    """A cache folder or file that must not be trusted: ``path`` and the ``reason``."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.path, self.reason = Path(path), reason


def _check(st: os.stat_result, path: Path, kind: str) -> None:
    """Raise :class:`UnsafeCache` unless ``st`` is a ``kind`` ("directory" or "regular file") of
    the current user, writable by no one else."""
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeCache(path, "is a symbolic link")
    if not (stat.S_ISDIR if kind == "directory" else stat.S_ISREG)(st.st_mode):
        raise UnsafeCache(path, f"is not a {kind}")
    if _POSIX:
        if st.st_uid != os.getuid():
            raise UnsafeCache(path, f"is owned by uid {st.st_uid}, not by the current user "
                                    f"(uid {os.getuid()})")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise UnsafeCache(path, f"is writable by its group or by others (mode "
                                    f"{stat.S_IMODE(st.st_mode):#o})")


def private_folder(folder: Path, *, create: bool) -> bool:
    """Whether ``folder`` exists (made, with its missing parents, mode ``0o700`` if ``create``).

    Raises
    ------
    UnsafeCache
        If the folder is a symbolic link, not a directory, another user's, or writable by others.
    OSError
        If it cannot be created.
    """
    missing = []
    path = Path(folder)
    while not os.path.lexists(path) and path.parent != path:
        missing.append(path)
        path = path.parent
    if missing and not create:
        return False
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # another process made it meanwhile: checked below like any existing folder
    _check(os.lstat(folder), Path(folder), "directory")
    return True


def read_private(path: Path, *, limit: int | None = None) -> bytes | None:
    """The bytes of the file ``path``, or None if it is missing.

    Raises
    ------
    UnsafeCache
        If ``path`` is a symbolic link, not a regular file (a FIFO, a device, a folder), another
        user's, or writable by its group or by others.
    OSError
        If it cannot be read, or holds more than ``limit`` bytes (default :data:`MAX_BYTES`).
    """
    limit = MAX_BYTES if limit is None else limit
    try:
        _check(os.lstat(path), path, "regular file")  # a FIFO is refused before it is opened
        fd = os.open(path, _READ_FLAGS)  # ... and should one replace the file now, it does not block
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        _check(st, path, "regular file")  # what was opened is what is read
        chunks, size = [], 0 if st.st_size <= limit else limit + 1
        while size <= limit:
            chunk = os.read(fd, min(2**20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
    return b"".join(chunks)


def _parse_key(data: bytes | None) -> bytes | None:
    try:
        key = bytes.fromhex(data.decode("ascii")) if data is not None else None
    except ValueError:  # not ASCII, not hex
        return None
    return key if key is not None and len(key) == KEY_BYTES else None


def secret_key(folder: Path, *, create: bool) -> bytes | None:
    """The HMAC key of the cache ``folder``; None if there is none (or none could be made).

    With ``create``, a missing key is created (see the module docstring) and a malformed one
    replaced.

    Raises
    ------
    UnsafeCache
        If the key file fails the checks of :func:`read_private`.
    OSError
        If it cannot be written (a key that cannot be read counts as malformed).
    """
    path = Path(folder) / KEY_NAME
    for _ in range(3):
        try:
            data = read_private(path, limit=4 * KEY_BYTES)
        except OSError:  # unreadable or too long: as malformed
            data = b""
        key = _parse_key(data)
        if key is not None or not create:
            return key
        new = secrets.token_bytes(KEY_BYTES)
        try:  # a missing key is created only if no other process has created one meanwhile
            io.atomic_write_text(path, new.hex(), permissions=0o600, exclusive=data is None)
        except FileExistsError:
            continue  # another process created it first: read and use its key
        return new
    return None


def mac(key: bytes, *parts: object) -> str:
    """HMAC-SHA256 (hex) of ``parts`` (strings, lists of strings) as one canonical JSON list."""
    message = json.dumps(list(parts), ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, message.encode("ascii"), hashlib.sha256).hexdigest()
