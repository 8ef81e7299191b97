#!/usr/bin/env bash
# make sanity: ansible-core's own `ansible-test sanity` over the modules, module_utils and plugins. ansible-test
# checks collections only, so this builds one from the repository in .cache/sanity/ (sglang.longctx), with the
# modules' `ansible.module_utils.sglang_*` imports rewritten to the collection's own module_utils, as a collection
# must import them. Usage: tests/sanity/run.sh [ansible-test sanity options, e.g. --test pylint].
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin="$repo/.venv/bin"
root="$repo/.cache/sanity"
coll="$root/ansible_collections/sglang/longctx"
# ansible-test wants the en_US.UTF-8 locale (else it warns and uses C.UTF-8): generated once, as root, where Debian's
# locales package is installed (it is on these machines); elsewhere the warning stays.
if ! locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$' && [ "$(id -u)" = 0 ] && [ -f /etc/locale.gen ] \
    && command -v locale-gen >/dev/null; then
  sed -i 's/^# *\(en_US\.UTF-8 UTF-8\)/\1/' /etc/locale.gen && locale-gen >/dev/null
fi
# ansible-test keeps its per-test virtual environments and caches under ~/.ansible/test: here, under .cache/.
export HOME="$root/home"
mkdir -p "$HOME/.ansible/test/cache"
# The pip that ansible-core 2.19's ansible-test bootstraps (ansible_test/_internal/python_requirements.py).
cp "$repo/tests/sanity/get_pip_offline.py" "$HOME/.ansible/test/cache/get_pip_24_2.py"
rm -rf "$coll"
mkdir -p "$coll"/plugins/{modules,module_utils,filter,callback,lib} "$coll/meta" "$coll/tests/sanity"
cp "$repo"/library/*.py "$coll/plugins/modules/"
cp "$repo"/module_utils/*.py "$coll/plugins/module_utils/"
cp "$repo"/filter_plugins/* "$coll/plugins/filter/"
cp "$repo"/callback_plugins/*.py "$coll/plugins/callback/"
# The filters find lib/ (the planner, the checks, the proof levels) in ../lib, next to their own folder:
# plugins/lib here. (lib/sglang_report draws pictures on the controller through a command, not a plugin.)
for package in sglang_kvplan sglang_checks sglang_state; do cp -r "$repo/lib/$package" "$coll/plugins/lib/"; done
find "$coll" -name __pycache__ -prune -exec rm -rf {} +
sed -i -E 's/^from ansible\.module_utils\.(sglang_[a-z_]+) import/from ansible_collections.sglang.longctx.plugins.module_utils.\1 import/' \
  "$coll"/plugins/modules/*.py "$coll"/plugins/module_utils/*.py
cp "$repo/tests/sanity/ignore-2.19.txt" "$coll/tests/sanity/ignore-2.19.txt"
cat > "$coll/galaxy.yml" <<'YAML'
namespace: sglang
name: longctx
version: 1.0.0
readme: README.md
authors: [sglang-longctx maintainers]
license: [Apache-2.0]
YAML
printf -- '---\nrequires_ansible: ">=2.19"\n' > "$coll/meta/runtime.yml"
printf '# sglang.longctx\n\nBuilt by tests/sanity/run.sh for ansible-test only.\n' > "$coll/README.md"
cd "$coll"
# ansible-test lists a collection's files with git; .cache/ is ignored by the repository's, so the copy has its own.
git init --quiet . && git add --all && git -c user.name=sanity -c user.email=sanity@localhost commit --quiet -m copy
started=$(date +%s)
trap 'echo "ansible-test sanity: $(( $(date +%s) - started )) s"' EXIT
"$bin/ansible-test" sanity --python 3.11 --color no "$@"
