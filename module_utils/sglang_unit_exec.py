"""What a systemd unit could start, read from its text: every word of every Exec* line systemd keeps, after the
unit's own variables are put in, with the strings a shell runs split into words too. The runtime prune
(library/sglang_runtime.py) keeps every runtime one of these words lies in, so that it never removes what a stopped
or crash-looping unit starts next.

Reading more than systemd would run only keeps more, so the reading is generous where systemd's rules are subtle:
every Exec* line (ExecStart and its Pre/Post, ExecReload, ExecStop, ...), every ExecStart of a oneshot, every word
wherever it stands (after `env A=1`, `numactl ...`, `nice`, `sh -c "..."`), every systemd prefix (@ - : + ! !! |)
taken off, systemd's fixed specifiers (%% %t %S ...) put in, `$VAR` and `${VAR}` replaced anywhere in a word from
the unit's Environment= and EnvironmentFile=, and a word cut at '=', ':' and ',' too (`PATH=<rt>/bin:/usr/bin`).
What it cannot read is said, never guessed: a command whose words hold a variable while an EnvironmentFile= cannot
be read, or a shell string that runs `$(...)`, is a problem, and the caller then removes nothing.

The text is the unit's as systemd combines it (unit_text): the file, then its drop-ins, from the folder beside it
and, for a unit in one of systemd's folders, from every one of them (`systemctl edit --runtime` writes to
/run/systemd/system)."""

from __future__ import annotations

import glob
import os
import re
import shlex

from ansible.module_utils.sglang_files import read_plain

# systemd's prefixes of an Exec line's program (systemd.service(5), "Table 1. Special executable prefixes"), '|' (run
# through the shell) included
EXEC_PREFIXES = "@-:+!|"
# Lines whose value is a path systemd starts from or looks programs up in (ExecSearchPath=, systemd 250)
PATH_KEYS = ("WorkingDirectory", "ExecSearchPath")
# What systemd itself sets for a command (systemd.exec(5), "Environment Variables in Spawned Processes"): no file of
# the unit decides them, so an unreadable EnvironmentFile= leaves `kill -HUP $MAINPID` as clear as it was.
MANAGER_VARIABLES = frozenset({
    "MAINPID", "MANAGERPID", "SERVICE_RESULT", "EXIT_CODE", "EXIT_STATUS", "INVOCATION_ID", "LISTEN_FDS",
    "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "WATCHDOG_PID", "WATCHDOG_USEC", "MONITOR_SERVICE_RESULT",
    "MONITOR_EXIT_CODE", "MONITOR_EXIT_STATUS", "MONITOR_INVOCATION_ID", "MONITOR_UNIT", "TRIGGER_UNIT",
})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
# $$ (a literal $ to systemd), ${NAME}, ${NAME:-default}, ${NAME:+alternative}, $NAME
VARIABLE = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:[-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
# where a word's paths are cut apart: an option's '=', a search path's ':', a list's ',', the shell's punctuation
PATH_SEPARATORS = re.compile(r"[=:,;&|()<>\s'\"`]")
# systemd's specifiers that name the same thing in every system unit (systemd.unit(5), "Specifiers"); '%%' is a '%'
# (the role's unit doubles every '%' of a path). The others (%n, %i, ...) are left as written.
FIXED_SPECIFIERS = {"%": "%", "t": "/run", "S": "/var/lib", "C": "/var/cache", "L": "/var/log", "E": "/etc",
                    "T": "/tmp", "V": "/var/tmp", "h": "/root"}
# Strings inside strings (sh -c "bash -c '...'") are split this deep; deeper ones are still scanned as words.
NESTING = 4


def logical_lines(text):
    """The unit's lines as systemd reads them: CRLF as LF, a line ending in a backslash joined to the next."""
    return re.sub(r"\\\n", " ", text.replace("\r\n", "\n")).split("\n")


def directives(text):
    """[(key, value)] of the unit's `Key=value` lines, in order (comments and section headers left out)."""
    found = []
    for line in logical_lines(text):
        match = re.match(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*=\s*(.*?)\s*$", line)
        if match:
            found.append((match.group(1), match.group(2)))
    return found


def settings(text):
    """{"exec": {key: [value]}, "environment": [value], "environment_files": [value], "paths": [value]} of the unit's
    text (a file and its drop-ins, joined in systemd's order). An empty value resets its key, as systemd does (the
    `ExecStart=` of a drop-in that replaces the command; `Environment=` clears the assignments before it)."""
    found = {"exec": {}, "environment": [], "environment_files": [], "paths": []}
    lists = {"Environment": found["environment"], "EnvironmentFile": found["environment_files"]}
    lists.update({key: found["paths"] for key in PATH_KEYS})
    for key, value in directives(text):
        if key.startswith("Exec") and key not in PATH_KEYS:
            target = found["exec"].setdefault(key, [])
        elif key in lists:
            target = lists[key]
        else:
            continue
        if value:
            target.append(value)
        else:
            del target[:]
    return found


def split_words(value, shell=False):
    """systemd's words of a command line (quotes taken off), or with shell a shell's (its punctuation ; & | ( ) < >
    apart too); a line whose quotes do not close is cut at whitespace instead, its quote marks dropped (a generous
    reading, never an error)."""
    try:
        lexer = shlex.shlex(value, posix=True, punctuation_chars=";&|()<>" if shell else False)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return [word.strip("'\"") for word in value.split()]


def assignments(value):
    """{NAME: value} of an Environment= line (`A=1 "B=two words"`); a word that is not NAME=value is left out."""
    found = {}
    for word in split_words(value):
        name, equals, rest = word.partition("=")
        if equals and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            found[name] = rest
    return found


def env_file_values(text):
    """{NAME: value} of an EnvironmentFile= (systemd's format: NAME=value lines, '#' and ';' comments, a value quoted
    or not, an optional `export `)."""
    found = {}
    for line in logical_lines(text):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        name, equals, rest = line.partition("=")
        name = name.strip()
        if not equals or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            continue
        rest = rest.strip()
        if rest[:1] in ("'", '"'):
            words = split_words(rest)
            rest = words[0] if len(words) == 1 else rest
        found[name] = rest
    return found


def environment(found, read):
    """(env, unreadable): the unit's variables, Environment= then each EnvironmentFile= over it (systemd's order), and
    the sentences of the files that could not be read. read(path) returns a file's bytes or raises OSError; a file
    prefixed '-' that does not exist is skipped, as systemd skips it; a pattern reads every file it matches."""
    env, unreadable = {}, []
    for value in found["environment"]:
        env.update(assignments(specifiers(value)))
    for value in found["environment_files"]:
        optional = value.startswith("-")
        pattern = value[1:] if optional else value
        paths = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not paths and not optional:
            unreadable.append("EnvironmentFile=%s matches no file" % pattern)
        for path in paths:
            try:
                env.update(env_file_values(read(path).decode("utf-8", "replace")))
            except FileNotFoundError:
                if not optional:
                    unreadable.append("EnvironmentFile=%s does not exist" % path)
            except OSError as error:
                unreadable.append("EnvironmentFile=%s cannot be read (%s)" % (path, error.strerror or error))
    return env, unreadable


def specifiers(value):
    """value with systemd's fixed specifiers put in (FIXED_SPECIFIERS: '%%' as '%', '%t' as /run, ...), as systemd
    does when it loads a unit, before any variable."""
    return re.sub(r"%(.)", lambda match: FIXED_SPECIFIERS.get(match.group(1), match.group(0)), value)


def expand(word, env):
    """(word with its variables replaced from env, the names it used): `$$` is a `$`, `${NAME}` and `$NAME` anywhere
    in the word, an unset one as empty, `${NAME:-default}` and `${NAME:+alternative}` as a shell has them."""
    used = set()

    def replace(match):
        dollar, braced, operator, operand, bare = match.groups()
        if dollar:
            return "$"
        name = braced or bare
        used.add(name)
        value = env.get(name, "")
        if operator == ":-":
            return value or operand
        if operator == ":+":
            return operand if value else ""
        return value

    return VARIABLE.sub(replace, word), used


def is_shell_script(words, index):
    """Whether words[index] is the string a shell runs: it follows `-c` (or `-ec`, `-lc`, ...) after a shell."""
    if index < 2 or not re.match(r"^-[A-Za-z]*c[A-Za-z]*$", words[index - 1]):
        return False
    return any(os.path.basename(word.lstrip(EXEC_PREFIXES)) in SHELLS for word in words[:index - 1])


def path_pieces(word):
    """The absolute paths a word may hold: the word itself and its parts between '=', ':', ',' and the shell's
    punctuation, each with systemd's prefixes taken off."""
    pieces = [word] + PATH_SEPARATORS.split(word)
    return [piece.lstrip(EXEC_PREFIXES) for piece in pieces if piece.lstrip(EXEC_PREFIXES).startswith("/")]


def scan_words(words, env, found, command=False, shell=False, depth=0):
    """Adds to found["paths"] every absolute path in words (and in the strings among them, split again), to
    found["used"] the variables systemd (in a command's words) or a shell (in the string it runs) puts in, and to
    found["problems"] what cannot be read: a shell string that runs a command to make its words ($(...), backticks).
    command: words is an Exec* line's; shell: they are a shell's (a string after `sh -c`, a command prefixed '|')."""
    for index, word in enumerate(words):
        script = shell or is_shell_script(words, index)
        if script and ("$(" in word or "`" in word):  # its words are not quoted: a unit may hold a secret
            problem = "a shell string of its Exec lines runs a command ($(...) or backticks) to make its words"
            if problem not in found["problems"]:
                found["problems"].append(problem)
        expanded, used = expand(specifiers(word) if command and depth == 0 else word, env)
        if (command and depth == 0) or shell:
            found["used"].update(used)
        for form in (word, expanded):
            found["paths"].update(path_pieces(form))
        if depth < NESTING:
            inner = split_words(expanded, shell=True)
            # a command's word a shell reads is read once more as the shell's (sh -c '$$RT/x': systemd makes it
            # '$RT/x', the shell puts RT in), any other word only when it splits
            if inner != [expanded] or (command and depth == 0 and script):
                scan_words(inner, env, found, command, script, depth + 1)


def startable_paths(text, read):
    """(paths, problems) of a unit's text (the file and its drop-ins joined): every absolute path a word of its Exec*
    lines, its WorkingDirectory= or ExecSearchPath=, or its environment's values holds, variables replaced; problems
    are sentences naming what could not be read, when a word's meaning depends on it. read(path) returns a file's
    bytes (an EnvironmentFile=) or raises OSError."""
    unit = settings(text)
    env, unreadable = environment(unit, read)
    found = {"paths": set(), "used": set(), "problems": []}
    for key in sorted(unit["exec"]):
        for value in unit["exec"][key]:
            words = split_words(value)
            through_shell = bool(words) and words[0].lstrip("@-:+!").startswith("|")
            scan_words(words, env, found, command=True, shell=through_shell)
    # PATH=<rt>/bin, RT=<rt>: a value a program reads may name what it starts
    for value in [specifiers(path) for path in unit["paths"]] + list(env.values()):
        scan_words([value], env, found)
    used = found["used"] - MANAGER_VARIABLES
    if used and unreadable:
        names = ", ".join("$" + name for name in sorted(used))
        found["problems"] += ["%s, and the unit's commands use %s" % (why, names) for why in unreadable]
    return found["paths"], found["problems"]


def program_words(text, env=None):
    """The words of each ExecStart= command systemd keeps, in order, each word with its prefixes taken off and its
    variables replaced from env, the strings a shell runs split into their words after it."""
    commands = []
    for value in settings(text)["exec"].get("ExecStart", []):
        words, given = [], split_words(value)
        for index, word in enumerate(given):
            expanded = expand(specifiers(word), env or {})[0]
            words.append(expanded.lstrip(EXEC_PREFIXES))
            if is_shell_script(given, index):
                words += [expand(inner, env or {})[0].lstrip(EXEC_PREFIXES)
                          for inner in split_words(expanded, shell=True)]
        commands.append(words)
    return commands


# -- the unit's text: its file and drop-ins, as systemd combines them ---------------------------------------------

def read_unit_file(path):
    """A unit's file or an EnvironmentFile= it names, whole (read_plain: a FIFO or a huge file is refused)."""
    return read_plain(path, follow=True)


# Where systemd looks for a system unit and its drop-ins, most important first (systemd.unit(5), "Unit File Load
# Path"): `systemctl edit --runtime` writes /run/systemd/system/<unit>.d/, a package /usr/lib/systemd/system/<unit>.d/.
SYSTEM_UNIT_DIRS = ("/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient",
                    "/run/systemd/generator.early", "/etc/systemd/system", "/etc/systemd/system.attached",
                    "/run/systemd/system", "/run/systemd/system.attached", "/run/systemd/generator",
                    "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system",
                    "/run/systemd/generator.late")


def drop_in_names(unit_name):
    """The <name>.d folders whose drop-ins apply to a unit, most specific first: its own, its dashed prefixes'
    (sglang-router.service: sglang-.service.d) and its type's (service.d)."""
    stem, dot, kind = unit_name.rpartition(".")
    if not dot:
        return [unit_name + ".d"]
    parts = stem.split("-")
    prefixes = ["-".join(parts[:count]) + "-." + kind + ".d" for count in range(len(parts) - 1, 0, -1)]
    return [unit_name + ".d"] + prefixes + [kind + ".d"]


def drop_in_files(unit_path, search=SYSTEM_UNIT_DIRS):
    """The drop-ins systemd applies to the unit, in its order (by file name): <unit>.d/*.conf beside it, and for a
    unit in one of systemd's folders (search) the drop-ins of every one of them, its dashed prefixes' and its type's
    too; a file name in a more important folder hides the same name in a later one."""
    folder, name = os.path.split(os.path.abspath(unit_path))
    folders = list(search) if folder in search else [folder]
    found = {}
    for where in folders:
        for drop_ins in drop_in_names(name) if folder in search else [name + ".d"]:
            path = os.path.join(where, drop_ins)
            if os.path.isdir(path):
                for entry in sorted(os.listdir(path)):
                    if entry.endswith(".conf"):
                        found.setdefault(entry, os.path.join(path, entry))
    return [found[entry] for entry in sorted(found)]


def unit_text(unit_path, search=SYSTEM_UNIT_DIRS):
    """The unit's text as systemd combines it: the file, then its drop-ins (drop_in_files: <unit>.d/*.conf beside it,
    as `systemctl edit` writes them, and systemd's other folders for a unit in one of them). None when the unit file
    is absent; OSError (NotPlainFile) when it or a drop-in cannot be read whole (a FIFO, over the size limit,
    unreadable)."""
    try:
        texts = [read_unit_file(unit_path).decode("utf-8", "replace")]
    except (FileNotFoundError, NotADirectoryError):  # no unit there (a store's own files are not entries)
        return None
    for path in drop_in_files(unit_path, search):
        texts.append(read_unit_file(path).decode("utf-8", "replace"))
    return "\n".join(texts)
