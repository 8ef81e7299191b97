"""Files the modules write: replaced whole or not at all, so that a crash or a full disk never leaves half a file
where a reader (the next run, systemd, the rollback) expects a whole one."""

from __future__ import annotations

import errno
import hashlib
import json
import os
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
    disk before it takes path's place; fill(handle) writes the content. Mode and owner (uid, gid) are set on the
    temporary file, so a secret is never readable under the new name, not even for a moment."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            fill(out)
            out.flush()
            os.fsync(out.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if owner is not None:
            try:
                os.chown(tmp, *owner)
            except PermissionError:  # not root: the mode is what keeps a secret
                pass
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
    link, a folder, a FIFO, a device): the caller says whether that is replaced or refused."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(status.st_mode):
        raise NotPlainFile(path, "is %s, not a regular file" % _kind_of(status.st_mode))
    if (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode), status.st_size) != (*owner, mode, len(data)):
        return False
    return read_plain(path) == data


def ensure_folder(folder, uid, gid, mode, check_mode):
    """True when the folder was (or, in check mode, would be) created or set to this owner, group and mode.
    ValueError when the path is something else (a file or a link): nothing goes below it."""
    try:
        status = os.lstat(folder)
    except FileNotFoundError:
        if not check_mode:
            os.mkdir(folder, mode)
            os.chown(folder, uid, gid)
            os.chmod(folder, mode)
        return True
    if not stat.S_ISDIR(status.st_mode):
        raise ValueError("%s is not a folder (a file or a link)" % folder)
    if (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (uid, gid, mode):
        return False
    if not check_mode:
        os.chown(folder, uid, gid)
        os.chmod(folder, mode)
    return True


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
