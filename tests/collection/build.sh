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
# and two rewrites, because a checkout and a collection name the same code differently:
#   1. a module's `from ansible.module_utils.sglang_x import` (the checkout's module_utils path, ansible.cfg) becomes
#      `from ansible_collections.sglang.longctx.plugins.module_utils.sglang_x import`, as a collection must import
#      its own module_utils;
#   2. a role's `| sglang_x` filter (found through ansible.cfg's filter_plugins in the checkout) becomes
#      `| sglang.longctx.sglang_x`: Ansible resolves a short filter name in builtin and configured paths only, never
#      in the collection of the role that uses it (modules are: a collection's role finds its own modules).
# tests/collection/test_collection.py checks that these are the only differences and that the installed tarball runs.
# Usage: tests/collection/build.sh [output folder]; prints the tarball's path.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$repo/.cache/collection}
bin="$repo/.venv/bin"
src="$out/src/ansible_collections/sglang/longctx"
rm -rf "$out/src"
mkdir -p "$src"/plugins/{modules,module_utils,filter,callback,action} "$src/lib" "$src/meta"
cp "$repo/galaxy.yml" "$repo/README.md" "$repo/LICENSE" "$src/"
cp -r "$repo/roles" "$src/roles"
cp "$repo"/library/*.py "$src/plugins/modules/"
cp "$repo"/module_utils/*.py "$src/plugins/module_utils/"
cp "$repo"/filter_plugins/*.py "$repo"/filter_plugins/*.yml "$src/plugins/filter/"
cp "$repo"/callback_plugins/*.py "$src/plugins/callback/"
cp "$repo"/action_plugins/*.py "$src/plugins/action/"
for package in "$repo"/lib/sglang_*/; do cp -r "$package" "$src/lib/"; done
ln -s ../lib "$src/plugins/lib"
find "$src" -name __pycache__ -prune -exec rm -rf {} +
printf -- '---\n# ansible-core 2.19 and 2.21 are tested (make unit, make core-next).\nrequires_ansible: ">=2.19"\n' \
  >"$src/meta/runtime.yml"

# 1. module_utils imports
sed -i -E 's/^from ansible\.module_utils\.(sglang_[a-z_]+) import/from ansible_collections.sglang.longctx.plugins.module_utils.\1 import/' \
  "$src"/plugins/modules/*.py "$src"/plugins/module_utils/*.py
# 2. the filters' names in the roles: every filter this collection ships (one *.yml doc each)
filters=$(cd "$repo/filter_plugins" && ls ./*.yml | sed -E 's#^\./##; s/\.yml$//' | paste -sd '|')
find "$src/roles" -type f \( -name '*.yml' -o -name '*.j2' \) -print0 \
  | xargs -0 sed -i -E "s/\|(\s*)($filters)\b/|\1sglang.longctx.\2/g"

"$bin/ansible-galaxy" collection build "$src" --output-path "$out" --force >/dev/null
version=$(sed -n 's/^version: *//p' "$repo/galaxy.yml")
echo "$out/sglang-longctx-$version.tar.gz"
