"""Files the modules write: replaced whole or not at all, so that a crash or a full disk never leaves half a file
where a reader (the next run, systemd, the rollback) expects a whole one."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import shutil
import stat
import tempfile

# The files the modules read back (manifests, units, the lock, a journal) are a few KB: anything bigger, or not a
# plain file, was not written by them and is named instead of read (a symlink to /dev/zero would fill the memory).
SMALL_FILE_LIMIT = 4 * 1024 * 1024


class NotPlainFile(OSError):
    """A path that is not a small regular file: strerror says what it is (a phrase the caller quotes)."""

    def __init__(self, path, what):
        super().__init__(errno.EINVAL, what, path)


def _kind_of(mode):
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_plain(path, limit=SMALL_FILE_LIMIT, follow=False):
    """The bytes of a regular file of at most limit bytes. NotPlainFile when it is a symbolic link (unless follow),
    a FIFO, a device, a folder or bigger than limit; never blocks (O_NONBLOCK: a FIFO is refused, not waited on)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP and not follow:
            raise NotPlainFile(path, "is a symbolic link, not a file the module wrote") from None
        raise
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotPlainFile(path, "is %s, not a regular file" % _kind_of(status.st_mode))
        if status.st_size > limit:
            raise NotPlainFile(path, "holds %d bytes, more than the %d a file the module wrote can hold"
                               % (status.st_size, limit))
        chunks, size = [], 0
        while size <= limit:
            block = os.read(fd, min(1 << 20, limit + 1 - size))
            if not block:
                break
            chunks.append(block)
            size += len(block)
        if size > limit:
            raise NotPlainFile(path, "grew past %d bytes while being read" % limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def load_json(path, limit=SMALL_FILE_LIMIT, follow=False):
    """The JSON in a small regular file (read_plain). ValueError for text that is not UTF-8 or not JSON, or nested
    too deeply to parse (a RecursionError otherwise escapes as a bare Python error)."""
    text = read_plain(path, limit, follow).decode("utf-8")  # UnicodeDecodeError is a ValueError
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("it is nested too deeply to be a file the module wrote") from None


def _replace_with(path, fill, mode=None, owner=None):
    """Write through a temporary file in path's own folder (same file system: os.replace is atomic), flushed to
    disk before it takes path's place; fill(handle) writes the content. Owner (uid, gid) and then mode are set on
    the temporary file, so a secret is never readable under the new name, not even for a moment; the chown comes
    first because it clears the setuid and setgid bits, which the chmod after it then keeps."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            fill(out)
            out.flush()
            os.fsync(out.fileno())
        if owner is not None:
            try:
                os.chown(tmp, *owner)
            except PermissionError:  # not root: the mode is what keeps a secret
                pass
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_atomic(path, content, mode=None, owner=None):
    """Replace path with content (str or bytes); mode and owner (uid, gid), when given, are set before the file
    takes its place."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    _replace_with(path, lambda out: out.write(data), mode, owner)


def matches(path, data, mode, owner):
    """True when path is a regular file that holds data (bytes) with this mode and owner (uid, gid): nothing to
    write. False when there is no file there or it differs; NotPlainFile when path is something else (a symbolic
    link, a folder, a FIFO, a device): the caller says whether that is replaced or refused. The content is compared
    block by block, whatever its size (a file over SMALL_FILE_LIMIT is not "changed" on every run)."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(status.st_mode):
        raise NotPlainFile(path, "is %s, not a regular file" % _kind_of(status.st_mode))
    if (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode), status.st_size) != (*owner, mode, len(data)):
        return False
    return _holds(path, data)


def _holds(path, data):
    """Whether the regular file at path holds exactly data; read in blocks (no copy of a large file in memory), never
    through a link and never waiting on a FIFO swapped in since the lstat."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return False
        view, offset = memoryview(data), 0
        for block in iter(lambda: handle.read(1 << 20), b""):
            if view[offset:offset + len(block)] != block:
                return False
            offset += len(block)
        return offset == len(data)


class WriteFailed(ValueError):
    """A file that could not be put in place: the message names the file the caller asked for (never a temporary
    name, never a bare errno) and what to do. partial: some files of the set could not be put back as they were."""

    def __init__(self, message, partial=False):
        super().__init__(message)
        self.partial = partial


# What to do about the errors a write meets, by errno: the operator reads the fix, not the number.
_FIXES = {
    errno.ENOSPC: "the file system holding %(folder)s is full: free space there and run again",
    errno.EDQUOT: "the disk quota for %(folder)s is used up: free space or raise the quota and run again",
    errno.EROFS: "%(folder)s is on a read-only file system: remount it read-write and run again",
    errno.EACCES: "permission denied: run the task as root (become: true)",
    errno.EPERM: "the system refused it: run the task as root (become: true), and check that %(path)s is not "
                 "immutable (lsattr %(path)s; chattr -i)",
    errno.ENOENT: "its folder %(folder)s does not exist: create it, or correct the path",
    errno.ENOTDIR: "a part of %(folder)s is not a folder: correct the path",
    errno.EISDIR: "%(path)s is a folder: move it away, the file goes there",
    errno.EIO: "the disk holding %(folder)s reported an I/O error: check it (dmesg) and run again",
    errno.ELOOP: "a folder on its way is now a symbolic link (it changed while the module ran): find out what "
                 "changes %(folder)s, and run again",
}


def write_failed(path, error, doing="written", name=None):
    """WriteFailed for the OSError met while writing (or reading) path or its temporary file: says path (or name,
    e.g. 'the_variable (path=...)'), what happened and the fix. str(OSError) would say '[Errno 28] ...' and name the
    temporary file, or no file at all."""
    what = getattr(error, "strerror", None) or str(error) or type(error).__name__
    fix = _FIXES.get(getattr(error, "errno", None), "correct the cause and run again")
    return WriteFailed("%s could not be %s (%s): %s"
                       % (name or path, doing, what, fix % {"path": path, "folder": os.path.dirname(path) or "."}))


def _unlink_quietly(path):
    """Remove a file of ours (a temporary file); one already gone is fine (cleanup must not hide the first error)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def stage(path, data, mode, owner):
    """The name of a temporary file beside path (same folder: the rename into place is atomic) that holds data
    (bytes), flushed to disk, with owner (uid, gid) and then mode - chown first, because it clears setuid and setgid.
    Unlike write_atomic, a chown that fails is an error: a file the caller asked to be another user's must not end
    up the caller's. WriteFailed naming path (nothing left behind) when any step fails, a full disk included."""
    try:
        handle, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                                       dir=os.path.dirname(os.path.abspath(path)))
    except OSError as error:
        raise write_failed(path, error) from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fchown(out.fileno(), *owner)
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
    except OSError as error:
        _unlink_quietly(tmp)
        raise write_failed(path, error) from None
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def discard(staged):
    """Remove the temporary files of [(path, tmp)] that stage made (the files at path are untouched)."""
    for _path, tmp in staged:
        _unlink_quietly(tmp)


def _keep(path):
    """A hard link to what is at path now (a file, a link, whatever it is), beside it, or None when nothing is
    there: what replace_all puts back when a later rename fails. A link costs no space and no copy."""
    while True:
        kept = os.path.join(os.path.dirname(os.path.abspath(path)),
                            ".%s.%s.keep" % (os.path.basename(path), secrets.token_hex(6)))
        try:
            os.link(path, kept, follow_symlinks=False)
            return kept
        except FileNotFoundError:
            if not os.path.lexists(path):
                return None
            raise
        except FileExistsError:  # another kept name took these random digits: draw again
            continue


def replace_all(staged):
    """Rename each (path, tmp) of staged into place, in order, as one change: when a rename fails, the files
    already renamed get back what they were (kept as hard links first), the rest of the temporary files are removed,
    and WriteFailed names the file that failed. A failure before the first rename changes nothing."""
    kept = []
    try:
        for path, _tmp in staged:
            kept.append(_keep(path))
    except OSError as error:
        failed = staged[len(kept)][0]
        _drop_kept(kept)
        discard(staged)
        raise write_failed(failed, error) from None
    done = 0
    try:
        for path, tmp in staged:
            os.replace(tmp, path)
            done += 1
    except OSError as error:
        undone = _put_back(staged[:done], kept[:done])
        discard(staged[done:])
        _drop_kept(kept)
        failure = write_failed(staged[done][0], error)
        if undone:
            raise WriteFailed("%s; and %s" % (failure, "; ".join(undone)), partial=True) from None
        raise failure from None
    _drop_kept(kept)


def _put_back(renamed, kept):
    """Undo the renames of [(path, tmp)]: each path gets back what kept holds (or is removed when there was nothing).
    The sentences of those that could not be put back (the caller reports them with the failure)."""
    problems = []
    for index, (path, _tmp) in enumerate(renamed):  # not zip(strict=): hosts may run a Python before 3.10
        old = kept[index]
        try:
            if old is None:
                os.unlink(path)
            else:
                os.replace(old, path)
        except OSError as error:
            problems.append("%s could not be put back as it was (%s): restore it from the backup store"
                            % (path, error.strerror or error))
    return problems


def _drop_kept(kept):
    for old in kept:
        if old is not None:
            _unlink_quietly(old)


def copy_atomic(src, dest):
    """Replace dest with a copy of src, keeping src's mode and owner."""
    def fill(out):
        with open(src, "rb") as handle:
            shutil.copyfileobj(handle, out)

    status = os.stat(src)
    _replace_with(dest, fill, status.st_mode & 0o7777, (status.st_uid, status.st_gid))


def sha256(path):
    """sha256 of a regular file's content, or None when there is no such file (a FIFO or device is none either:
    os.path.isfile follows a symlink to the thing itself, and the open never waits on a FIFO)."""
    if not os.path.isfile(path):
        return None
    sha = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # replaced between the two calls
            return None
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()
