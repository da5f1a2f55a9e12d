"""What makes an output folder one run's: its fingerprint, and the lock that keeps other runs out.

Fingerprints
    :func:`fingerprint` is a plain dict of everything that determines the files of a sweep folder;
    :func:`fingerprint_digest` hashes it; :func:`fingerprint_difference` names the first field in
    which two fingerprints differ (for one-line refusals of ``--resume``).

Folder locks
    :func:`folder_lock` takes an exclusive, non-blocking lock on a folder (a ``.lock`` file inside
    it, with the ``filelock`` package), so two runs cannot write into the same folder at once.

Like :mod:`replica_mlm._base.io`, on which it builds, it imports nothing else from the package.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replica_mlm._base.io import dumps, loads

__all__ = ["LOCK_NAME", "FolderBusy", "fingerprint", "fingerprint_difference", "fingerprint_digest",
           "folder_lock"]

#: name of the lock file :func:`folder_lock` creates inside a folder
LOCK_NAME = ".replica-mlm.lock"


def fingerprint(**fields: Any) -> dict[str, Any]:
    """A fingerprint: the given fields (e.g. function, points, seed, version) as plain JSON values.

    Two runs whose fingerprints are equal compute the same files; :func:`fingerprint_difference`
    says where two fingerprints differ.
    """
    return loads(dumps(fields))


def fingerprint_digest(fp: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of a fingerprint (sorted keys)."""
    return hashlib.sha256(dumps(fp, sort_keys=True).encode()).hexdigest()


def _same(a: Any, b: Any) -> bool:
    # JSON equality, with nan equal to nan (a stored nan is the same parameter as a fresh one)
    return dumps(a, sort_keys=True) == dumps(b, sort_keys=True)


def fingerprint_difference(stored: dict[str, Any], current: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """The first difference between two fingerprints, or ``None`` if they are equal.

    Returns
    -------
    (field, stored_value, current_value) or None
        ``field`` is a top-level key; where both values are lists of dicts of the same length
        (e.g. the points of a sweep) it is ``"key[index].subkey"`` and the values are the
        differing entries; where the lists have different lengths it is ``"len(key)"`` with the
        two lengths.
    """
    for key in list(stored) + [k for k in current if k not in stored]:
        a, b = stored.get(key), current.get(key)
        if _same(a, b):
            continue
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return f"len({key})", len(a), len(b)
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                if _same(x, y):
                    continue
                if isinstance(x, dict) and isinstance(y, dict):
                    for sub in list(x) + [s for s in y if s not in x]:
                        if not _same(x.get(sub), y.get(sub)):
                            return f"{key}[{i}].{sub}", x.get(sub), y.get(sub)
                return f"{key}[{i}]", x, y
        return key, a, b
    return None


class FolderBusy(OSError):
    """Another process holds the lock of an output folder."""


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike) -> Iterator[Path]:
    """Hold an exclusive lock on ``folder`` (created if missing) for the duration of the block.

    The lock is the file ``folder/.replica-mlm.lock`` locked with ``filelock`` (``flock`` on
    POSIX); it does not block: if another process holds it, :class:`FolderBusy` is raised at once.
    The operating system releases the lock when the holder exits, even by ``SIGKILL``. The file is
    removed, still locked, when the block ends, so a folder keeps no lock file after a run; a
    process that opened the old file before it went and locks it afterwards sees that the name
    no longer leads to the file it holds, and tries again with the new one (so two runs never hold
    two different files of the same name).

    Raises
    ------
    FolderBusy
        If another run is writing into ``folder``.
    OSError
        If the folder cannot be created, or no file can be created in it (``/proc/self``, a
        read-only folder: "not a writable folder", naming it).
    """
    from filelock import FileLock, Timeout

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:  # the real reason a lock cannot be taken (filelock would report any failure as "busy")
        os.close(os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666))
    except OSError as exc:
        raise type(exc)(exc.errno, f"not a writable folder (cannot create {LOCK_NAME} in it: "
                                   f"{exc.strerror})", os.fspath(folder)) from None
    path = folder / LOCK_NAME
    for _ in range(LOCK_ATTEMPTS):
        lock = FileLock(path, timeout=0, is_singleton=False, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            raise FolderBusy(
                f"another run is writing into {folder} (it holds {path}); wait for it to "
                f"finish or choose another output folder") from None
        if _same_file(path, lock):
            break
        lock.release()  # the file was removed (a run ended) between opening and locking it
    else:  # pragma: no cover - runs ending and starting in the same microseconds, again and again
        raise FolderBusy(f"the lock of {folder} keeps changing hands; try again")
    try:
        yield folder
    finally:
        with contextlib.suppress(OSError):  # removed while still held: no run can hold it since
            path.unlink()
        lock.release()


#: times :func:`folder_lock` takes a lock whose file was removed meanwhile before it gives up
LOCK_ATTEMPTS = 100


def _same_file(path: Path, lock) -> bool:
    """Whether the name ``path`` still leads to the file ``lock`` holds open (not removed since)."""
    fd = getattr(getattr(lock, "_context", None), "lock_file_fd", None)
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    if fd is None:  # pragma: no cover - a filelock without the descriptor: trust the name
        return True
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)
