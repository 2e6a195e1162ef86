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
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from kafka_wire.broker.effects import (
    Append,
    Delete,
    FileRegion,
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
        self._files: dict[Path, None] = {}
        self._directories: dict[Path, None] = {}
        #: How many times the group was flushed.
        self.flushes = 0

    def __len__(self) -> int:
        return len(self._files) + len(self._directories)

    def file(self, path: Path) -> None:
        self._files[path] = None

    def directory(self, path: Path) -> None:
        self._directories[path] = None

    def flush_file(self, path: Path) -> None:
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


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    if not directory.is_dir():
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # file systems that cannot fsync a directory
            raise OSError(exc.errno, exc.strerror, str(directory)) from exc
    finally:
        os.close(fd)


class FileStorage:
    """Files under ``root``: ``list_dir`` / ``size`` / ``read`` for the engine, ``apply`` for its effects."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def _real(self, path: str) -> Path:
        parts = [p for p in path.split("/") if p]
        if path.startswith("/") or any(p in (".", "..") for p in parts):
            raise ValueError(f"storage path {path!r} is not relative to the data directory")
        return self.root.joinpath(*parts)

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
            case MakeDir(path):
                real = self._real(path)
                if not real.is_dir():
                    real.mkdir(parents=True, exist_ok=True)
                    fsyncs.directory(real.parent)
            case Append(path, data):
                real = self._real(path)
                real.parent.mkdir(parents=True, exist_ok=True)
                with open(real, "ab") as f:
                    f.write(data)
            case WriteAt(path, position, data):
                real = self._real(path)
                real.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(real, os.O_WRONLY | os.O_CREAT, 0o644)
                try:
                    written = 0
                    while written < len(data):
                        written += os.pwrite(fd, data[written:], position + written)
                finally:
                    os.close(fd)
            case Truncate(path, size):
                real = self._real(path)
                fsyncs.flush_file(real)  # a sync asked before the cut covers what was there
                real.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(real, os.O_WRONLY | os.O_CREAT, 0o644)
                try:
                    os.ftruncate(fd, size)
                finally:
                    os.close(fd)
            case Fsync(path):
                real = self._real(path)
                if real.is_file():
                    fsyncs.file(real)
                fsyncs.directory(real.parent if real.is_file() or not real.exists() else real)
            case Rename(source, target):
                fsyncs.flush()  # what was synced before a rename is durable before it happens
                src, dst = self._real(source), self._real(target)
                if src.exists():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(src, dst)
                    fsyncs.directory(dst.parent)
                    fsyncs.directory(src.parent)
            case Delete(path):
                fsyncs.flush()
                real = self._real(path)
                if real.is_dir() and not real.is_symlink():
                    with contextlib.suppress(FileNotFoundError):
                        shutil.rmtree(real)
                else:
                    try:
                        real.unlink()
                    except FileNotFoundError:
                        pass
        if group is None:
            fsyncs.flush()

    # -- zero-copy sends ---------------------------------------------------------------------------
    def open_region(self, region: FileRegion) -> tuple[int, int, int]:
        """``(fd, offset, size)`` for ``os.sendfile``; the caller closes ``fd``.

        Open regions as soon as a send is queued: an open descriptor keeps reading the same file
        even after a later effect renames or deletes it.
        """
        fd = os.open(self._real(region.path), os.O_RDONLY)
        return fd, region.position, region.size
