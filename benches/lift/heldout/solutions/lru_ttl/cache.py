"""A least-recently-used cache whose entries expire."""

import time
from collections import OrderedDict


class Cache:
    def __init__(self, capacity, ttl, clock=time.monotonic):
        if capacity < 1 or ttl <= 0:
            raise ValueError("capacity must be at least 1 and ttl positive")
        self.capacity, self.ttl, self.clock = capacity, ttl, clock
        self.entries = OrderedDict()

    def _drop_expired(self):
        now = self.clock()
        for key in [k for k, (_, at) in self.entries.items() if now - at >= self.ttl]:
            del self.entries[key]

    def get(self, key, default=None):
        self._drop_expired()
        if key not in self.entries:
            return default
        self.entries.move_to_end(key)
        return self.entries[key][0]

    def put(self, key, value):
        self._drop_expired()
        self.entries.pop(key, None)
        if len(self.entries) >= self.capacity:
            self.entries.popitem(last=False)
        self.entries[key] = (value, self.clock())

    def __len__(self):
        self._drop_expired()
        return len(self.entries)

    def __contains__(self, key):
        self._drop_expired()
        return key in self.entries
