"""INI-style configuration text."""

import re


def parse_value(raw):
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return raw[1:-1]
    return re.split(r"\s[#;]", raw, maxsplit=1)[0].strip()


def parse_config(text):
    config, section = {}, None
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        m = re.fullmatch(r"\[(.*)\]", stripped)
        if m and m.group(1).strip():
            section = config.setdefault(m.group(1).strip(), {})
        elif "=" in stripped and not stripped.startswith("["):
            key, raw = stripped.split("=", 1)
            key = key.strip().lower()
            if not key:
                raise ValueError(f"line {n}: no key before '='")
            if section is None:
                section = config.setdefault("", {})
            if key in section:
                raise ValueError(f"line {n}: key {key!r} given twice")
            section[key] = parse_value(raw)
        else:
            raise ValueError(f"line {n}: not a section, a key = value or a comment")
    return config


def get_bool(config, section, key, default=False):
    value = config.get(section, {}).get(key)
    if value is None:
        return default
    if value.lower() in ("yes", "true", "on", "1"):
        return True
    if value.lower() in ("no", "false", "off", "0"):
        return False
    raise ValueError(f"[{section}] {key} = {value!r} is not a yes/no value")
