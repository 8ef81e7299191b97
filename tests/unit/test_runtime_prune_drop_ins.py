"""The drop-ins the prune (library/sglang_runtime.py) reads for a unit in systemd's folders
(module_utils/sglang_unit_exec.py drop_in_files): a `systemctl edit --runtime` override in /run, a package's in
/usr/lib, a dashed prefix's and the type's folders, a name in a more important folder hiding the same name in a later
one. Here the folders are a test's copies of systemd's (search=...)."""

import pytest
from ansible.module_utils.sglang_unit_exec import (
    drop_in_files,
    drop_in_names,
    read_unit_file,
    startable_paths,
    unit_text,
)

LIVE = "/opt/sglang/runtimes/0.5.22-95b74fa642a9"
OLD = "/opt/sglang/runtimes/0.5.21-aaaaaaaaaaaa"


@pytest.fixture
def systemd(tmp_path):
    search = tuple(str(tmp_path / name) for name in ("etc", "run", "usr"))
    for folder in search:
        (tmp_path / folder).mkdir()
    unit = tmp_path / "etc" / "sglang-main.service"
    unit.write_text("[Service]\nExecStart=%s/bin/sglang-serve\n" % LIVE)
    return tmp_path, search, unit


def drop_in(folder, name, text):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)


def test_a_runtime_override_in_run_is_read_after_the_unit(systemd):
    tmp_path, search, unit = systemd
    drop_in(tmp_path / "run" / "sglang-main.service.d", "override.conf",
            "[Service]\nExecStart=\nExecStart=%s/bin/sglang-serve\n" % OLD)
    text = unit_text(str(unit), search)
    paths = startable_paths(text, read_unit_file)[0]
    assert OLD + "/bin/sglang-serve" in paths and LIVE + "/bin/sglang-serve" not in paths, paths


def test_a_name_in_a_more_important_folder_hides_the_same_name_later(systemd):
    tmp_path, search, unit = systemd
    drop_in(tmp_path / "etc" / "sglang-main.service.d", "50-x.conf", "[Service]\nExecStartPre=/etc/x\n")
    drop_in(tmp_path / "usr" / "sglang-main.service.d", "50-x.conf", "[Service]\nExecStartPre=/usr/x\n")
    drop_in(tmp_path / "usr" / "sglang-main.service.d", "60-y.conf", "[Service]\nExecStartPre=/usr/y\n")
    files = drop_in_files(str(unit), search)
    assert files == [str(tmp_path / "etc" / "sglang-main.service.d" / "50-x.conf"),
                     str(tmp_path / "usr" / "sglang-main.service.d" / "60-y.conf")], files


def test_dashed_prefixes_and_the_types_folder_apply_too(systemd):
    tmp_path, search, unit = systemd
    drop_in(tmp_path / "run" / "sglang-.service.d", "10-a.conf", "[Service]\nExecStartPre=%s/bin/python -V\n" % OLD)
    drop_in(tmp_path / "usr" / "service.d", "20-b.conf", "[Service]\nEnvironment=B=1\n")
    drop_in(tmp_path / "usr" / "other.service.d", "30-c.conf", "[Service]\nExecStartPre=/not/ours\n")
    names = [path.rsplit("/", 2)[-2:] for path in drop_in_files(str(unit), search)]
    assert names == [["sglang-.service.d", "10-a.conf"], ["service.d", "20-b.conf"]], names
    assert OLD + "/bin/python" in startable_paths(unit_text(str(unit), search), read_unit_file)[0]


def test_a_unit_outside_systemds_folders_reads_only_its_own_drop_ins(systemd, tmp_path):
    _root, search, _unit = systemd
    entry = tmp_path / "store" / "e1"
    entry.mkdir(parents=True)
    (entry / "sglang-main.service").write_text("[Service]\nExecStart=%s/bin/sglang-serve\n" % LIVE)
    drop_in(tmp_path / "run" / "sglang-main.service.d", "override.conf", "[Service]\nExecStartPre=/run/x\n")
    drop_in(entry / "sglang-main.service.d", "keep.conf", "[Service]\nExecStartPre=/store/x\n")
    files = drop_in_files(str(entry / "sglang-main.service"), search)
    assert files == [str(entry / "sglang-main.service.d" / "keep.conf")], files


def test_a_drop_in_that_cannot_be_read_is_an_error_not_nothing(systemd):
    tmp_path, search, unit = systemd
    (tmp_path / "run" / "sglang-main.service.d").mkdir()
    (tmp_path / "run" / "sglang-main.service.d" / "big.conf").write_text("#" * (5 * 1024 * 1024))
    with pytest.raises(OSError):
        unit_text(str(unit), search)


@pytest.mark.parametrize("name, expected", [
    ("sglang.service", ["sglang.service.d", "service.d"]),
    ("sglang-router.service", ["sglang-router.service.d", "sglang-.service.d", "service.d"]),
    ("a-b-c.service", ["a-b-c.service.d", "a-b-.service.d", "a-.service.d", "service.d"]),
])
def test_drop_in_names(name, expected):
    assert drop_in_names(name) == expected
