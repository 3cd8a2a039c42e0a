"""INI-style configuration text."""


def parse_config(text: str) -> dict[str, dict[str, str]]:
    raise NotImplementedError


def get_bool(config: dict[str, dict[str, str]], section: str, key: str, default: bool = False) -> bool:
    raise NotImplementedError
