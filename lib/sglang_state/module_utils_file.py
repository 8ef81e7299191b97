"""One of the modules' shared files (module_utils/<name>.py) loaded by its path on the controller, where module_utils/
is not a package: the decisions that must say a thing exactly as a module does (the journal excerpt's shape, a kernel
build's PATH) read the one definition instead of a copy. It is module_utils/ in the checkout and plugins/module_utils/
in the collection (tests/collection/build.sh), both beside lib/."""

from __future__ import annotations

import importlib.util
import os


def load(name):
    """module_utils/<name>.py as a module of its own (named sglang_longctx_<name>, never ansible.module_utils.*)."""
    top = os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, os.pardir)
    paths = [os.path.join(top, *folder, name + ".py") for folder in (["module_utils"], ["plugins", "module_utils"])]
    path = next(path for path in paths if os.path.exists(path))
    spec = importlib.util.spec_from_file_location("sglang_longctx_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
