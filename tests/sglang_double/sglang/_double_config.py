"""`--config <file.yaml>` for the TEST DOUBLE, as SGLang merges it.

Ported from SGLang's ConfigArgumentMerger: 0.5.9 `sglang/srt/server_args_config_parser.py`, 0.5.23
`sglang/srt/utils/server_args_config_parser.py` (the newer one; it also accepts any long spelling of a
flag as a key, and dict values as JSON). Called from `prepare_server_args` exactly when "--config" is in
argv. Precedence: CLI > config > defaults, because the config's options are put FIRST and argparse
keeps the last value it sees.

The host's SGLang venv has PyYAML (an SGLang dependency); the double's venv may not (it is installed
offline, without dependencies), so without PyYAML a small reader handles the flat `key: value` mapping
such a file holds (scalars, quoted strings, `[a, b]` and `- item` lists).
"""

import argparse
import json
from pathlib import Path


def _config_keys(action):
    # YAML keys may use any long spelling of a flag, not just the one matching dest (0.5.23).
    return {action.dest} | {o[2:].replace("-", "_") for o in action.option_strings if o.startswith("--")}


def _takes_one_value(action):
    return isinstance(action, argparse._StoreAction) or action.nargs is None


class ConfigArgumentMerger:
    def __init__(self, parser):
        self.store_true_actions = [key for action in parser._actions
                                   if isinstance(action, argparse._StoreTrueAction)
                                   for key in _config_keys(action)]
        supported = [a for a in parser._actions
                     if isinstance(a, argparse._StoreTrueAction) or _takes_one_value(a)]
        supported_keys = {key for a in supported for key in _config_keys(a)}
        self.unsupported_actions = {
            key: a for a in parser._actions
            if a.option_strings and a not in supported and "--config" not in a.option_strings
            and "--help" not in a.option_strings and "-h" not in a.option_strings
            for key in _config_keys(a) if key not in supported_keys}

    def merge_config_with_args(self, cli_args):
        path = self._extract_config_file_path(cli_args)
        if not path:
            return cli_args
        config_args = self._convert_config_to_args(self._parse_yaml_config(path))
        index = cli_args.index("--config")
        return config_args + cli_args[:index] + cli_args[index + 2:]

    @staticmethod
    def _extract_config_file_path(args):
        indices = [i for i, arg in enumerate(args) if arg == "--config"]
        if len(indices) > 1:
            raise ValueError("Multiple config files specified! Only one allowed.")
        if not indices:
            return None
        if indices[0] == len(args) - 1:
            raise ValueError("No config file specified after --config flag!")
        return args[indices[0] + 1]

    @staticmethod
    def _parse_yaml_config(file_path):
        path = Path(file_path)
        if path.suffix.lower() not in [".yaml", ".yml"]:
            raise ValueError(f"Config file must be YAML format, got: {path.suffix}")
        if not path.exists():
            raise ValueError(f"Config file not found: {file_path}")
        with open(file_path) as handle:
            data = safe_load(handle.read())
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ValueError("Config file must contain a dictionary at root level")
        return data

    def _convert_config_to_args(self, config):
        args = []
        for key, value in config.items():
            key_norm = key.replace("-", "_")
            if key_norm in self.unsupported_actions:
                action = self.unsupported_actions[key_norm]
                raise ValueError(f"Unsupported config option '{key_norm}' with action "
                                 f"'{action.__class__.__name__}'")
            if isinstance(value, bool):
                if key_norm in self.store_true_actions:
                    if value:
                        args.append(f"--{key}")
                else:
                    args.extend([f"--{key}", str(value).lower()])
            elif isinstance(value, list):
                if value:
                    args.append(f"--{key}")
                    args.extend(str(item) for item in value)
            elif isinstance(value, dict):
                args.extend([f"--{key}", json.dumps(value)])
            else:
                args.extend([f"--{key}", str(value)])
        return args


def safe_load(text):
    try:
        import yaml
    except ImportError:
        return _flat_yaml(text)
    return yaml.safe_load(text)


def _scalar(text):
    text = text.strip()
    if not text or text in ("~", "null", "Null", "NULL"):
        return None
    if text[0] in "\"'" and text[-1] == text[0] and len(text) >= 2:
        return json.loads(text) if text[0] == '"' else text[1:-1].replace("''", "'")
    if text.lower() in ("true", "yes", "on"):
        return True
    if text.lower() in ("false", "no", "off"):
        return False
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(item) for item in inner.split(",")] if inner else []
    if text.startswith("{"):
        return json.loads(text)
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _flat_yaml(text):
    """A flat mapping of scalars and lists: what an SGLang config file holds."""
    data, last = {}, None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip() or line.strip() == "---":
            continue
        if line.lstrip().startswith("- ") and last is not None:
            if not isinstance(data[last], list):
                data[last] = []
            data[last].append(_scalar(line.lstrip()[2:]))
            continue
        if line[0].isspace() or ":" not in line:
            raise ValueError("config line %d: only a flat 'key: value' mapping is understood here "
                             "(install PyYAML for more): %r" % (number, raw))
        key, _, value = line.partition(":")
        last = key.strip()
        data[last] = _scalar(value)
    return data or None
