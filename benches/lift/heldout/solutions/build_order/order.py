"""The order to build tasks in, given what each needs first."""

import heapq


class CycleError(ValueError):
    """Some tasks need each other: `tasks` are those left unordered."""

    def __init__(self, tasks):
        super().__init__(f"cycle among {', '.join(tasks)}")
        self.tasks = tasks


def graph(deps):
    needs = {t: set(d) for t, d in deps.items()}
    for d in list(deps.values()):
        for t in d:
            needs.setdefault(t, set())
    return needs


def build_order(deps):
    needs = graph(deps)
    waiting = {t: len(n) for t, n in needs.items()}
    ready = [t for t, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        t = heapq.heappop(ready)
        order.append(t)
        for other, n in needs.items():
            if t in n:
                waiting[other] -= 1
                if waiting[other] == 0:
                    heapq.heappush(ready, other)
    if len(order) < len(needs):
        raise CycleError(sorted(set(needs) - set(order)))
    return order


def layers(deps):
    needs = graph(deps)
    level = {}
    for t in build_order(deps):
        level[t] = 1 + max((level[d] for d in needs[t]), default=-1)
    out = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for t in sorted(level):
        out[level[t]].append(t)
    return out
