"""tests/collection/build.sh writes only into a folder it created and ships only what git tracks (issue 36 item 5,
probe 5 N-S5-8): a folder it did not make is refused untouched (`build.sh ~` once removed ~/src), an untracked
file under roles/ (a .vault_pass) never reaches the tarball, and outside a git checkout it refuses with a sentence
instead of shipping whatever lies in the folder."""

import os
import shutil
import subprocess
import tarfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(REPO, "tests", "collection", "build.sh")
MARKER = ".sglang-collection-build"
PREFIX = "tests/collection/build.sh: "


def build(out, script=BUILD):
    return subprocess.run([script, str(out)], capture_output=True, text=True, timeout=300)


def shipped(tarball):
    with tarfile.open(tarball) as archive:
        return set(archive.getnames())


def tree_with_this_build_sh(dest, how):
    """A copy of the repository as a clone ('clone') or as an unpacked source tarball ('archive'), with this working
    tree's build.sh (the one under test) and the checkout's .venv (ignored by git, as in every clone)."""
    if how == "clone":
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", REPO, str(dest)], check=True, timeout=120)
    else:
        dest.mkdir()
        archive = subprocess.run(["git", "-C", REPO, "archive", "HEAD"], check=True, capture_output=True, timeout=120)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True, timeout=120)
    shutil.copy(BUILD, dest / "tests" / "collection" / "build.sh")
    os.symlink(os.path.join(REPO, ".venv"), dest / ".venv")
    return dest / "tests" / "collection" / "build.sh"


def test_a_folder_it_did_not_create_is_refused_and_left_as_it_was(tmp_path):
    # the probe's reproduction: OUT/src/my-project/notes.txt was removed with OUT/src
    notes = tmp_path / "out" / "src" / "my-project" / "notes.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("precious\n")
    result = build(tmp_path / "out")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(PREFIX + "the output folder %s already holds files that this script did not "
                                    "write" % (tmp_path / "out")), result.stderr
    assert "Give a new folder (it is created) or an empty one" in result.stderr
    assert notes.read_text() == "precious\n"
    assert sorted(os.listdir(tmp_path / "out")) == ["src"] and os.listdir(tmp_path / "out" / "src") == ["my-project"]


def test_a_file_or_a_link_as_the_output_folder_is_refused(tmp_path):
    (tmp_path / "file").write_text("mine\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    for name, what in (("file", "not a folder"), ("link", "a symbolic link")):
        result = build(tmp_path / name)
        assert result.returncode == 2 and ("is %s" % what) in result.stderr, result.stderr
    assert (tmp_path / "file").read_text() == "mine\n" and os.listdir(tmp_path / "elsewhere") == []


def test_a_new_an_empty_and_its_own_folder_are_built_and_a_file_beside_its_own_is_kept(tmp_path):
    new, empty = tmp_path / "a" / "new", tmp_path / "empty"
    empty.mkdir()
    for out in (new, empty):
        result = build(out)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "%s/sglang-longctx-1.0.0.tar.gz" % out
        assert (out / MARKER).is_file()
    (new / "mine.txt").write_text("kept\n")  # beside the build: not something the script wrote, so not removed
    again = build(new)
    assert again.returncode == 0, again.stderr
    assert (new / "mine.txt").read_text() == "kept\n"
    assert sorted(os.listdir(new)) == [MARKER, "mine.txt", "sglang-longctx-1.0.0.tar.gz", "src"]
    # only the collection is left under src/ (the tracked files' staging copy is removed)
    assert os.listdir(new / "src") == ["ansible_collections"]


def test_a_folder_an_earlier_build_sh_wrote_without_its_marker_is_its_own(tmp_path):
    # .cache/collection and .cache/sanity/build on every existing clone: make collection and make sanity keep working
    out = tmp_path / "out"
    (out / "src" / "ansible_collections" / "sglang" / "longctx" / "roles").mkdir(parents=True)
    (out / "sglang-longctx-0.9.0.tar.gz").write_bytes(b"old")
    result = build(out)
    assert result.returncode == 0, result.stderr
    assert (out / MARKER).is_file() and (out / "sglang-longctx-1.0.0.tar.gz").is_file()


def test_only_tracked_files_are_shipped(tmp_path):
    script = tree_with_this_build_sh(tmp_path / "clone", "clone")
    clone = tmp_path / "clone"
    secret = clone / "roles" / "sglang" / "files" / ".vault_pass"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("vault-password\n")
    (clone / "library" / "scratch.py").write_text("print('mine')\n")
    (clone / "lib" / "sglang_report" / "notes.txt").write_text("local\n")
    result = build(tmp_path / "out", script)
    assert result.returncode == 0, result.stderr
    names = shipped(result.stdout.strip())
    assert "roles/sglang/tasks/main.yml" in names and "plugins/modules/sglang_run_report.py" in names
    assert not [n for n in names if ".vault_pass" in n or "scratch.py" in n or "notes.txt" in n], sorted(names)
    # said by name (not by content), so that a file someone forgot to `git add` is not missing without a word
    assert ("not shipped, because git does not track them (git add a file to ship it):\n  lib/sglang_report/notes.txt\n"
            "  library/scratch.py\n  roles/sglang/files/.vault_pass\n") in result.stderr, result.stderr
    assert "vault-password" not in result.stderr
    # a file that is only `git add`ed is tracked: it ships
    subprocess.run(["git", "-C", str(clone), "add", "library/scratch.py"], check=True, timeout=60)
    again = build(tmp_path / "out", script)
    assert again.returncode == 0, again.stderr
    assert "plugins/modules/scratch.py" in shipped(again.stdout.strip())
    assert not [n for n in shipped(again.stdout.strip()) if ".vault_pass" in n]
    assert "scratch.py" not in again.stderr


def test_outside_a_git_checkout_it_refuses_with_a_sentence(tmp_path):
    script = tree_with_this_build_sh(tmp_path / "unpacked", "archive")
    result = build(tmp_path / "out", script)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(PREFIX + "%s is not a git checkout" % (tmp_path / "unpacked")), result.stderr
    assert "Build the collection from a git clone" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_copy_inside_another_checkout_is_not_that_checkout(tmp_path):
    # an unpacked tarball inside someone's git repository: git would answer for the outer repository's files
    outer = tmp_path / "outer"
    outer.mkdir()
    subprocess.run(["git", "init", "--quiet", str(outer)], check=True, timeout=60)
    script = tree_with_this_build_sh(outer / "unpacked", "archive")
    result = build(tmp_path / "out", script)
    assert result.returncode == 2 and "is not a git checkout" in result.stderr, result.stderr
