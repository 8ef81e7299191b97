"""module_utils/sglang_unit_exec.py: what a unit's text could start, as plain functions over text (the prune's
reading, tests/unit/test_runtime_prune_probe6.py runs it through the module)."""

import errno

import pytest
from ansible.module_utils import sglang_unit_exec as ux

RT = "/opt/sglang/runtimes/0.5.22-95b74fa642a9"


def no_files(path):
    raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)


def files(**by_path):
    def read(path):
        if path not in by_path:
            return no_files(path)
        if isinstance(by_path[path], Exception):
            raise by_path[path]
        return by_path[path].encode()
    return read


def paths_of(text, read=no_files):
    paths, problems = ux.startable_paths(text, read)
    assert problems == [], problems
    return paths


@pytest.mark.parametrize("line", [
    "ExecStart=/usr/bin/env A=1 {rt}/bin/sglang-serve",
    'ExecStart=/bin/sh -c "exec {rt}/bin/sglang-serve --port 1"',
    "ExecStart=/bin/bash -ec 'cd /tmp && {rt}/bin/sglang-serve; echo done'",
    "ExecStart=/usr/bin/sh -c \"bash -c 'exec {rt}/bin/sglang-serve'\"",
    "ExecStart=/usr/bin/numactl --interleave=all {rt}/bin/sglang-serve",
    "ExecStart=/usr/bin/taskset -c 0-7 /usr/bin/nice -n 5 /usr/bin/stdbuf -oL {rt}/bin/sglang-serve",
    "ExecStart=/usr/bin/chrt -f 10 {rt}/bin/sglang-serve",
    "ExecStart=|{rt}/bin/sglang-serve",
    "ExecStart=!!{rt}/bin/sglang-serve",
    "ExecStart=-@{rt}/bin/sglang-serve sglang",
    "ExecStart=/usr/bin/env PYTHONPATH={rt}/lib sglang-serve",
    "ExecStart=/usr/bin/x --runtime={rt}",
    "ExecStartPre=/bin/true ; {rt}/bin/python -c x",
    "WorkingDirectory={rt}",
    "ExecSearchPath=/usr/bin:{rt}/bin",
])
def test_every_word_wherever_it_stands_is_read(line):
    paths = paths_of("[Service]\n" + line.format(rt=RT) + "\n")
    assert any(path.startswith(RT) for path in paths), paths


def test_variables_are_put_in_from_environment_and_environment_files():
    text = ("[Service]\nEnvironment=\"BASE=/opt/sglang\" OTHER=1\nEnvironmentFile=/etc/sglang/sglang.env\n"
            "ExecStart=${BASE}/runtimes/${NAME}/bin/sglang-serve\nExecStartPre=/bin/sh -c 'exec $${BASE}/x'\n")
    read = files(**{"/etc/sglang/sglang.env": "# comment\n; another\nexport NAME=\"0.5.22-95b74fa642a9\"\n"})
    paths = paths_of(text, read)
    assert RT + "/bin/sglang-serve" in paths and "/opt/sglang/x" in paths, paths


def test_an_environment_file_overrides_environment_and_a_reset_clears_it():
    text = ("[Service]\nEnvironment=RT=/elsewhere\nEnvironmentFile=-/etc/rt.env\nExecStart=$RT/bin/sglang-serve\n")
    assert RT + "/bin/sglang-serve" in paths_of(text, files(**{"/etc/rt.env": "RT=%s\n" % RT}))
    cleared = text + "EnvironmentFile=\n"
    assert "/elsewhere/bin/sglang-serve" in paths_of(cleared, files(**{"/etc/rt.env": "RT=%s\n" % RT}))


def test_a_missing_optional_environment_file_is_skipped_as_systemd_skips_it():
    text = "[Service]\nEnvironmentFile=-/nowhere.env\nExecStart=${RT}/bin/sglang-serve\n"
    assert "/bin/sglang-serve" in paths_of(text)


@pytest.mark.parametrize("env_file, error", [
    ("/etc/sglang.env", PermissionError(errno.EACCES, "Permission denied")),
    ("/etc/sglang.env", None),  # absent, and not optional
])
def test_an_environment_file_that_cannot_be_read_makes_a_variable_a_problem(env_file, error):
    text = "[Service]\nEnvironmentFile=%s\nExecStart=${RT}/bin/sglang-serve\n" % env_file
    read = files(**{env_file: error}) if error else no_files
    _paths, problems = ux.startable_paths(text, read)
    assert len(problems) == 1 and env_file in problems[0] and "$RT" in problems[0], problems


def test_without_a_variable_or_with_systemds_own_an_unreadable_file_is_no_problem():
    text = ("[Service]\nEnvironmentFile=/gone.env\nExecStart=\"%s/bin/sglang-serve\" \"--x\" \"$$HOME\"\n"
            "ExecReload=/bin/kill -HUP $MAINPID\n" % RT)
    assert RT + "/bin/sglang-serve" in paths_of(text)


@pytest.mark.parametrize("line", [
    "ExecStart=/bin/sh -c '$${RT}/bin/sglang-serve'",
    "ExecStart=/bin/sh -c $$RT/bin/sglang-serve",
    "ExecStart=-|$$RT/bin/sglang-serve --port 1",
])
def test_a_shell_puts_in_what_systemd_left_as_a_variable(line):
    text = "[Service]\nEnvironment=RT=%s\n%s\n" % (RT, line)
    assert RT + "/bin/sglang-serve" in paths_of(text)
    _paths, problems = ux.startable_paths(text.replace("Environment=", "EnvironmentFile=/gone\nEnvironment="),
                                          no_files)
    assert problems and "$RT" in problems[0], problems


def test_a_shell_variable_counts_when_the_file_cannot_be_read():
    text = "[Service]\nEnvironmentFile=/gone.env\nExecStart=/bin/sh -c 'exec $$RT/bin/sglang-serve'\n"
    _paths, problems = ux.startable_paths(text, no_files)
    assert problems and "$RT" in problems[0], problems


@pytest.mark.parametrize("line", [
    "ExecStart=/bin/sh -c 'exec $(cat /etc/rt)/bin/sglang-serve'",
    "ExecStart=/bin/bash -c 'exec `cat /etc/rt`/bin/sglang-serve'",
    "ExecStart=|exec $(cat /etc/rt)/bin/sglang-serve",
])
def test_a_shell_string_that_makes_its_words_with_a_command_is_a_problem(line):
    _paths, problems = ux.startable_paths("[Service]\n%s\n" % line, no_files)
    assert len(problems) == 1 and "runs a command" in problems[0] and "/etc/rt" not in problems[0], problems


def test_a_command_substitution_outside_a_shell_is_only_text():
    # python -c's program is no shell's: its `$(` runs nothing
    text = '[Service]\nExecStart="%s/bin/python" "-c" "print(\'$$(x)\')"\n' % RT
    assert RT + "/bin/python" in paths_of(text)


def test_an_empty_exec_line_resets_only_its_own_key():
    text = ("[Service]\nExecStart=/old/bin/a\nExecStartPre=/pre/bin/b\n"
            "ExecStart=\nExecStart=%s/bin/sglang-serve\n" % RT)
    paths = paths_of(text)
    assert "/old/bin/a" not in paths and "/pre/bin/b" in paths and RT + "/bin/sglang-serve" in paths


def test_continued_lines_crlf_and_comments():
    text = "[Service]\r\n# ExecStart=/commented/out\r\nExecStart=/usr/bin/env \\\r\n    %s/bin/sglang-serve\r\n" % RT
    paths = paths_of(text)
    assert RT + "/bin/sglang-serve" in paths and not any(path.startswith("/commented") for path in paths)


def test_unclosed_quotes_are_read_generously():
    assert RT + "/bin/sglang-serve" in paths_of('[Service]\nExecStart=/bin/sh -c "exec %s/bin/sglang-serve\n' % RT)


def test_systemds_fixed_specifiers_are_put_in_first():
    # the role's unit doubles a path's '%'; '%t' is /run in every system unit; '%i' is left as written
    text = ('[Service]\nEnvironment="RT=%%t/rt"\nExecStart="/opt/a%%%%b/bin/sglang-serve" "$${RT}" "%%i"\n'
            "WorkingDirectory=%%S/sglang\n").replace("%%", "%")
    paths = paths_of(text)
    assert {"/opt/a%b/bin/sglang-serve", "/run/rt", "/var/lib/sglang"} <= paths, paths
    assert not any("%i" in path for path in paths) and ux.specifiers("date +%i") == "date +%i"


@pytest.mark.parametrize("word, env, expected", [
    ("${A}/x", {"A": "/a"}, "/a/x"),
    ("$A/x", {"A": "/a"}, "/a/x"),
    ("$$A/x", {"A": "/a"}, "$A/x"),
    ("${A:-/d}/x", {}, "/d/x"),
    ("${A:-/d}/x", {"A": "/a"}, "/a/x"),
    ("${A:+/set}/x", {"A": "1"}, "/set/x"),
    ("${A:+/set}/x", {}, "/x"),
    ("${UNSET}/x", {}, "/x"),
])
def test_expand(word, env, expected):
    assert ux.expand(word, env)[0] == expected


def test_the_main_commands_words_for_the_serving_runtime():
    text = ("[Service]\nType=oneshot\nEnvironment=RT=%s\nExecStart=/bin/sh -c 'exec $${RT}/bin/sglang-serve'\n"
            "ExecStart=/bin/true\n" % RT)
    commands = ux.program_words(text, {"RT": RT})
    assert commands[-1] == ["/bin/true"] and RT + "/bin/sglang-serve" in commands[0], commands
