"""Storage effects applied to real files, and the :class:`StorageReader` over them.

Paths in effects and reads are POSIX paths relative to ``root`` (the data directory). Paths that
would leave ``root`` (absolute, or with ``..``) are refused with ``ValueError``: they can only come
from a bug, as the engine builds every path itself.

A write that fails raises the ``OSError`` (disk full, read-only file system, too many open files,
I/O error): the driver reports it to the engine (``kafka_wire.broker.driving.settle``), which takes
the log directory offline. New directories and renamed files have their directory entries made
durable (the parent directory is fsynced), so a rename survives a power cut once it is applied.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from kafka_wire.broker.effects import (
    Append,
    Delete,
    Fsync,
    MakeDir,
    Rename,
    StorageEffect,
    Truncate,
    WriteAt,
)


class GroupCommit:
    """Fsyncs that several effects asked for, each done once (a group commit).

    A file or a directory is synced once however many effects asked, files first, when
    :meth:`flush` is called: at the end of the group, and before a rename or a delete (a rename
    must never become durable before what was synced ahead of it). A truncation first syncs the
    file it cuts, if that was asked."""

    __slots__ = ("_directories", "_files", "flushes")

    def __init__(self) -> None:
        self._files: dict[str, None] = {}
        self._directories: dict[str, None] = {}
        #: How many times the group was flushed.
        self.flushes = 0

    def __len__(self) -> int:
        return len(self._files) + len(self._directories)

    def file(self, path: str) -> None:
        self._files[path] = None

    def directory(self, path: str) -> None:
        self._directories[path] = None

    def flush_file(self, path: str) -> None:
        if path in self._files:
            del self._files[path]
            _fsync_file(path)

    def flush(self) -> None:
        """Do every fsync asked since the last flush (``OSError`` naming the path when one fails)."""
        files, self._files = self._files, {}
        directories, self._directories = self._directories, {}
        self.flushes += 1
        for path in files:
            _fsync_file(path)
        for path in directories:
            _fsync_dir(path)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, path) from exc
    finally:
        os.close(fd)


def _fsync_dir(directory: str) -> None:
    if not os.path.isdir(directory):
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # file systems that cannot fsync a directory
            raise OSError(exc.errno, exc.strerror, directory) from exc
    finally:
        os.close(fd)


def _open_for_writing(real: str, flags: int) -> int:
    """A descriptor to write ``real``, creating the file (and its directory) when missing."""
    try:
        return os.open(real, flags | os.O_CREAT, 0o644)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(real), exist_ok=True)
        return os.open(real, flags | os.O_CREAT, 0o644)


def _write_all(fd: int, data: bytes, position: int | None = None) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view) if position is None else os.pwrite(fd, view, position)
        view = view[written:]
        if position is not None:
            position += written


class FileStorage:
    """Files under ``root``: ``list_dir`` / ``size`` / ``read`` for the engine, ``apply`` for its effects."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._root = str(self.root)

    def _real(self, path: str) -> str:
        parts = [p for p in path.split("/") if p]
        if path.startswith("/") or "." in parts or ".." in parts:
            raise ValueError(f"storage path {path!r} is not relative to the data directory")
        return os.path.join(self._root, *parts)

    # -- StorageReader -----------------------------------------------------------------------------
    def list_dir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(self._real(path)))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def size(self, path: str) -> int | None:
        try:
            st = os.stat(self._real(path))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return None if stat.S_ISDIR(st.st_mode) else st.st_size

    def read(self, path: str, position: int, size: int) -> bytes:
        if size <= 0:
            return b""
        try:
            fd = os.open(self._real(path), os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return b""
        try:
            chunks: list[bytes] = []
            while size > 0:
                chunk = os.pread(fd, size, position)
                if not chunk:
                    break
                chunks.append(chunk)
                position += len(chunk)
                size -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    # -- effects -----------------------------------------------------------------------------------
    def apply(self, effects: Iterable[object]) -> None:
        """Apply every storage effect in order (other effects are ignored)."""
        for effect in effects:
            if isinstance(effect, StorageEffect):
                self.apply_one(effect)

    def apply_one(self, effect: StorageEffect, group: GroupCommit | None = None) -> None:
        """Apply one effect. With ``group``, the fsyncs it asks for join the group's (done by
        :meth:`GroupCommit.flush`); without, they are done before it returns."""
        fsyncs = GroupCommit() if group is None else group
        match effect:
            case Append(path, data):
                fd = _open_for_writing(self._real(path), os.O_WRONLY | os.O_APPEND)
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
            case MakeDir(path):
                real = self._real(path)
                if not os.path.isdir(real):
                    os.makedirs(real, exist_ok=True)
                    fsyncs.directory(os.path.dirname(real))
            case WriteAt(path, position, data):
                fd = _open_for_writing(self._real(path), os.O_WRONLY)
                try:
                    _write_all(fd, data, position)
                finally:
                    os.close(fd)
            case Truncate(path, size):
                real = self._real(path)
                fsyncs.flush_file(real)  # a sync asked before the cut covers what was there
                fd = _open_for_writing(real, os.O_WRONLY)
                try:
                    os.ftruncate(fd, size)
                finally:
                    os.close(fd)
            case Fsync(path):
                real = self._real(path)
                if os.path.isfile(real):
                    fsyncs.file(real)
                    fsyncs.directory(os.path.dirname(real))
                else:
                    fsyncs.directory(real if os.path.exists(real) else os.path.dirname(real))
            case Rename(source, target):
                fsyncs.flush()  # what was synced before a rename is durable before it happens
                src, dst = self._real(source), self._real(target)
                if os.path.exists(src):
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    os.replace(src, dst)
                    fsyncs.directory(os.path.dirname(dst))
                    fsyncs.directory(os.path.dirname(src))
            case Delete(path):
                fsyncs.flush()
                real = self._real(path)
                if os.path.isdir(real) and not os.path.islink(real):
                    import shutil  # loaded by the first directory deletion, not at start

                    with contextlib.suppress(FileNotFoundError):
                        shutil.rmtree(real)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(real)
        if group is None:
            fsyncs.flush()
