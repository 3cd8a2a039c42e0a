"""The order to build tasks in, given what each needs first."""


class CycleError(ValueError):
    """Some tasks need each other: `tasks` are those left unordered."""

    def __init__(self, tasks):
        super().__init__(f"cycle among {', '.join(tasks)}")
        self.tasks = tasks


def build_order(deps: dict[str, list[str]]) -> list[str]:
    raise NotImplementedError


def layers(deps: dict[str, list[str]]) -> list[list[str]]:
    raise NotImplementedError
