"""Replace a set of live files as one: the whole new state or, after any failure, the old one untouched.

Phase 1 stages every new file beside its destination (same folder, so same file system: the rename below is
atomic) and fsyncs it; a failure here (a full disk) removes the staged copies and has touched nothing live.
Phase 2 keeps each displaced original under a hidden name (a hard link, so the live name never goes missing) and
renames the staged file over the live one, or renames away a live file the new state does not have; a failure here
puts every original back. Only when every rename succeeded are the originals deleted."""

from __future__ import annotations

import errno
import os
import shutil
import uuid

TAG = ".sglang-restore-"


class SwapError(Exception):
    def __init__(self, message, lost=()):
        super().__init__(message)
        self.lost = list(lost)  # [(dest, where its original is kept)] that could not be put back


def sibling(dest, token, kind):
    """The hidden name beside dest for a staged copy (kind 'new') or a displaced original ('old')."""
    folder, base = os.path.split(dest)
    return os.path.join(folder, ".%s%s%s.%s" % (base, TAG, token, kind))


def leftovers(dest):
    """Hidden files beside dest left by a restore that died: [(path, kind)]."""
    folder, base = os.path.split(dest)
    prefix = "." + base + TAG
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [(os.path.join(folder, n), n.rsplit(".", 1)[-1]) for n in sorted(names) if n.startswith(prefix)]


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _stage(src, dest, token):
    path = sibling(dest, token, "new")
    status = os.stat(src)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # a secret is never readable while staged
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as handle:
            shutil.copyfileobj(handle, out)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.chown(path, status.st_uid, status.st_gid)
        except PermissionError:  # not root: the mode is what keeps a secret
            pass
        os.chmod(path, status.st_mode & 0o7777)
    except BaseException:
        _unlink(path)
        raise
    return path


def _keep_original(dest, old):
    """old becomes a second name of dest's file; where hard links are refused, a copy."""
    try:
        os.link(dest, old)
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            raise
        shutil.copy2(dest, old)


def _sync_folder(folder):
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a folder; the renames are made either way
        pass
    finally:
        os.close(fd)


def swap(plan):
    """plan: [(dest, src)], src a file to put at dest or None to remove dest. All or nothing; SwapError says
    which phase failed and, in the unlikely case that an original could not be put back, where it is kept."""
    token = uuid.uuid4().hex[:12]
    staged = {}
    try:
        for dest, src in plan:
            if src is not None:
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                staged[dest] = _stage(src, dest, token)
    except OSError as error:
        for path in staged.values():
            _unlink(path)
        raise SwapError("writing the new files failed (%s); the live files were not touched" % error) from None
    done = []  # (dest, original kept at, or None when dest did not exist)
    try:
        for dest, src in plan:
            old = sibling(dest, token, "old") if os.path.lexists(dest) else None
            if src is None:
                if old is not None:
                    os.rename(dest, old)
                    done.append((dest, old))
                continue
            if old is not None:
                _keep_original(dest, old)
            try:
                os.replace(staged[dest], dest)
            except BaseException:
                if old is not None:
                    _unlink(old)  # dest still is the original
                raise
            done.append((dest, old))
    except OSError as error:
        lost = _undo(done)
        for path in staged.values():
            _unlink(path)
        if lost:
            raise SwapError("renaming the new files into place failed (%s), and %s could not be put back; the "
                            "originals are kept beside them: %s" % (error, ", ".join(d for d, o in lost),
                                                                    ", ".join(o for d, o in lost)), lost) from None
        raise SwapError("renaming the new files into place failed (%s); every live file was put back as it "
                        "was" % error) from None
    for folder in sorted({os.path.dirname(dest) for dest, src in plan}):
        _sync_folder(folder)
    for old in [kept for dest, kept in done if kept is not None]:
        _unlink(old)


def _undo(done):
    """Put back each original, newest rename first; [(dest, old)] of those that could not be."""
    lost = []
    for dest, old in reversed(done):
        try:
            if old is None:
                _unlink(dest)
            else:
                os.replace(old, dest)
        except OSError:
            lost.append((dest, old))
    return lost
