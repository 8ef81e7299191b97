#!/usr/bin/env bash
# make collection: the collection sglang.longctx built from this checkout, for other teams' playbooks
# (`ansible-galaxy collection install .cache/collection/sglang-longctx-<version>.tar.gz`, then
# `sglang.longctx.sglang`, `sglang.longctx.sglang_smoke_test`, `sglang.longctx.sglang_kv_plan`, ...).
# The files are the checkout's, laid out where a collection keeps them (generated under .cache/, never in git):
#   roles/*                -> roles/
#   library/*.py           -> plugins/modules/
#   module_utils/*.py      -> plugins/module_utils/
#   filter_plugins/*       -> plugins/filter/     (their docs, *.yml, beside them)
#   callback_plugins/*.py  -> plugins/callback/
#   action_plugins/*.py    -> plugins/action/     (documented by their plugins/modules/ file of the same name)
#   lib/sglang_*           -> lib/, as in the checkout: the roles' ../../lib (report.yml), and plugins/lib -> ../lib,
#                             the filters' ../lib (whose ../roles is the collection's roles/, as in the checkout)
#   site.yml, playbooks/*  -> playbooks/          (sglang.longctx.site, .check, .plan, .rollback; site.yml imports
#                             check.yml from its own folder, the one line that differs besides the filters)
#   docs/* but its script  -> docs/               (the messages point to docs/variables.md)
# and two rewrites, because a checkout and a collection name the same code differently:
#   1. a module's `from ansible.module_utils.sglang_x import` (the checkout's module_utils path, ansible.cfg) becomes
#      `from ansible_collections.sglang.longctx.plugins.module_utils.sglang_x import`, as a collection must import
#      its own module_utils;
#   2. a role's or a playbook's `| sglang_x` filter (found through ansible.cfg's filter_plugins in the checkout) becomes
#      `| sglang.longctx.sglang_x`: Ansible resolves a short filter name in builtin and configured paths only, never
#      in the collection of the role that uses it (modules are: a collection's role finds its own modules).
# tests/collection/test_collection.py checks that these are the only differences and that the installed tarball runs.
# What it ships is what git tracks (`git ls-files`, the index: a new file counts once it is `git add`ed), never the
# whole working tree: an untracked file under roles/ or lib/ (a .vault_pass, a local note, a scratch script) stays out
# of a tarball that others install or publish. Outside a git checkout (a source tarball, a copy) there is no such list
# and the script refuses rather than guess which files are the project's.
# Usage: tests/collection/build.sh [output folder]; prints the tarball's path. The output folder (default
# .cache/collection) is one this script creates: a new folder, an empty one, or one it wrote before (it leaves its
# marker file there); any other folder is refused untouched, so that `build.sh ~` cannot remove ~/src.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$repo/.cache/collection}
bin="$repo/.venv/bin"
marker=.sglang-collection-build

refuse() {
  printf 'tests/collection/build.sh: %s\n' "$*" >&2
  exit 2
}

# -- only the tracked files, from a checkout whose root is this repository (not a copy inside another one)
command -v git >/dev/null || refuse "git is not installed: the collection ships the files git tracks (git ls-files)," \
  "so that an untracked file never reaches the tarball. Install git (apt-get install git) and run it again."
top=$(git -C "$repo" rev-parse --show-toplevel 2>/dev/null) || top=
if [ -z "$top" ] || ! [ "$top" -ef "$repo" ]; then
  refuse "$repo is not a git checkout (no .git: unpacked from a tarball, or copied), so there is no list of the" \
    "project's files (git ls-files) to ship, and shipping the whole folder could publish an untracked secret." \
    "Build the collection from a git clone: git clone <repository> && cd <it> && make venv collection."
fi

# -- the output folder: created here, or recognised as created here
# Before the marker, build.sh wrote exactly src/ansible_collections/sglang/longctx/ and sglang-longctx-*.tar.gz into
# its folder: such a folder (.cache/collection, .cache/sanity/build on every existing clone) is its own.
only_entry() {  # the folder $1 holds nothing but $2
  [ -d "$1" ] && ! [ -L "$1" ] && [ -z "$(find "$1" -mindepth 1 -maxdepth 1 ! -name "$2" -print -quit)" ]
}
earlier_build() {
  [ -z "$(find "$1" -mindepth 1 -maxdepth 1 ! \( -name src -type d \) ! \( -name 'sglang-longctx-*.tar.gz' -type f \) \
    -print -quit)" ] && { ! [ -e "$1/src" ] || { only_entry "$1/src" ansible_collections \
      && only_entry "$1/src/ansible_collections" sglang && only_entry "$1/src/ansible_collections/sglang" longctx; }; }
}
if [ -L "$out" ] || { [ -e "$out" ] && ! [ -d "$out" ]; }; then
  refuse "the output folder $out is $( [ -L "$out" ] && echo 'a symbolic link' || echo 'not a folder'): give a" \
    "new folder (it is created) or an empty one."
elif [ -d "$out" ] && ! [ -f "$out/$marker" ] && [ -n "$(find "$out" -mindepth 1 -maxdepth 1 -print -quit)" ] \
    && ! earlier_build "$out"; then
  refuse "the output folder $out already holds files that this script did not write (it has no $marker): the" \
    "script writes only into a folder it created, and replaces only what it wrote there, so it leaves this one" \
    "untouched. Give a new folder (it is created) or an empty one, or remove $out yourself if it is a build."
fi
mkdir -p -- "$out"
echo "tests/collection/build.sh built here; it replaces src/ and sglang-longctx-*.tar.gz in this folder." \
  >"$out/$marker"

src="$out/src/ansible_collections/sglang/longctx"
# The tracked files as they are in the working tree (modified ones as modified: tests build what is being tested),
# copied into checkout/ first, so that every step below reads a tree that holds nothing untracked; a tracked file
# deleted from the working tree is left out, as a commit of that tree would.
checkout="$out/src/checkout"
rm -rf "$out/src"
mkdir -p "$checkout" "$src"/plugins/{modules,module_utils,filter,callback,action} "$src"/{lib,meta,playbooks,docs}
git -C "$repo" ls-files -z --cached -- galaxy.yml README.md LICENSE roles library module_utils filter_plugins \
  callback_plugins action_plugins lib site.yml playbooks docs \
  | while IFS= read -r -d '' path; do
    if [ -e "$repo/$path" ] || [ -L "$repo/$path" ]; then printf '%s\0' "$path"; fi
  done >"$out/src/files"
# Said, not silently dropped: a new file someone forgot to `git add` would otherwise be missing from the collection
# with no word (its name only is printed, never its content).
untracked=$(git -C "$repo" ls-files --others --exclude-standard -- roles library module_utils filter_plugins \
  callback_plugins action_plugins lib site.yml playbooks docs)
if [ -n "$untracked" ]; then
  printf 'tests/collection/build.sh: not shipped, because git does not track them (git add a file to ship it):\n' >&2
  printf '%s\n' "$untracked" | sed 's/^/  /' >&2
fi
tar -C "$repo" --null --verbatim-files-from --no-recursion -T "$out/src/files" -cf - | tar -C "$checkout" -xf -
cp "$checkout/galaxy.yml" "$checkout/README.md" "$checkout/LICENSE" "$src/"
cp -r "$checkout/roles" "$src/roles"
cp "$checkout"/library/*.py "$src/plugins/modules/"
cp "$checkout"/module_utils/*.py "$src/plugins/module_utils/"
cp "$checkout"/filter_plugins/*.py "$checkout"/filter_plugins/*.yml "$src/plugins/filter/"
cp "$checkout"/callback_plugins/*.py "$src/plugins/callback/"
cp "$checkout"/action_plugins/*.py "$src/plugins/action/"
for package in "$checkout"/lib/sglang_*/; do cp -r "$package" "$src/lib/"; done
# The playbooks, run as sglang.longctx.site, .check, .plan, .rollback (a collection's playbook runs with its
# collection as the default one: its roles and modules by their short names): site.yml beside the others, so its
# check phase is imported from its own folder. The docs the messages point to (docs/variables.md) come along.
cp "$checkout"/playbooks/*.yml "$src/playbooks/"
sed 's#^\(\s*ansible\.builtin\.import_playbook:\) playbooks/#\1 #' "$checkout/site.yml" >"$src/playbooks/site.yml"
find "$checkout/docs" -maxdepth 1 -type f ! -name '*.py' -exec cp {} "$src/docs/" \;
ln -s ../lib "$src/plugins/lib"
printf -- '---\n# ansible-core 2.19 and 2.21 are tested (make unit, make core-next).\nrequires_ansible: ">=2.19"\n' \
  >"$src/meta/runtime.yml"

# 1. module_utils imports
sed -i -E 's/^from ansible\.module_utils\.(sglang_[a-z_]+) import/from ansible_collections.sglang.longctx.plugins.module_utils.\1 import/' \
  "$src"/plugins/modules/*.py "$src"/plugins/module_utils/*.py
# 2. the filters' names in the roles: every filter this collection ships (one *.yml doc each)
filters=$(cd "$checkout/filter_plugins" && ls ./*.yml | sed -E 's#^\./##; s/\.yml$//' | paste -sd '|')
find "$src/roles" "$src/playbooks" -type f \( -name '*.yml' -o -name '*.j2' \) -print0 \
  | xargs -0 sed -i -E "s/\|(\s*)($filters)\b/|\1sglang.longctx.\2/g"

"$bin/ansible-galaxy" collection build "$src" --output-path "$out" --force >/dev/null
rm -rf "$checkout" "$out/src/files"
version=$(sed -n 's/^version: *//p' "$src/galaxy.yml")
echo "$out/sglang-longctx-$version.tar.gz"
