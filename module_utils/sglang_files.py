"""Files the modules write: replaced whole or not at all, so that a crash or a full disk never leaves half a file
where a reader (the next run, systemd, the rollback) expects a whole one."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile


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


def write_atomic(path, content, mode=None):
    """Replace path with content (str or bytes); mode, when given, is set before the file takes its place."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    _replace_with(path, lambda out: out.write(data), mode)


def copy_atomic(src, dest):
    """Replace dest with a copy of src, keeping src's mode and owner."""
    def fill(out):
        with open(src, "rb") as handle:
            shutil.copyfileobj(handle, out)

    status = os.stat(src)
    _replace_with(dest, fill, status.st_mode & 0o7777, (status.st_uid, status.st_gid))


def sha256(path):
    """sha256 of a file's content, or None when there is no such file."""
    if not os.path.isfile(path):
        return None
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()
