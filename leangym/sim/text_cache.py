"""A least-recently-used cache of a function of one text, bounded in characters as well as entries.

``functools.lru_cache`` bounds only the number of entries, and a parse keeps ~50 bytes
per character of its text: 65,536 cached 2 kB proofs would hold gigabytes, for ever.
Here texts longer than ``max_text`` are not cached at all (long texts rarely repeat,
and parsing costs time linear in them), and the cached texts together hold at most
``max_chars`` characters. Results must be immutable: every caller gets the same object.
"""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any, Callable, NamedTuple


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    entries: int
    chars: int  # characters of the cached texts


ENTRY_CHARS = 4  # what one entry costs beyond its text (key, links), counted in characters (~50 bytes each)


def text_cache(max_text: int, max_chars: int,
               max_entries: int) -> Callable[[Callable[[str], Any]], Callable[[str], Any]]:
    """Decorator: cache ``fn(text)`` (exceptions are not cached). The wrapper has ``cache_info()``
    and ``cache_clear()``, and is safe to call from several threads."""

    def decorate(fn: Callable[[str], Any]) -> Callable[[str], Any]:
        cache: OrderedDict[str, Any] = OrderedDict()
        lock = threading.Lock()
        stats = [0, 0, 0]  # hits, misses, characters held (with ENTRY_CHARS per entry)

        @functools.wraps(fn)
        def cached(text: str) -> Any:
            if len(text) > max_text:
                return fn(text)
            with lock:
                try:
                    result = cache[text]
                except KeyError:
                    stats[1] += 1
                else:
                    cache.move_to_end(text)
                    stats[0] += 1
                    return result
            result = fn(text)  # outside the lock: other threads' parses go on meanwhile
            with lock:
                if text not in cache:  # (another thread may have put it there meanwhile)
                    cache[text] = result
                    stats[2] += len(text) + ENTRY_CHARS
                    while stats[2] > max_chars or len(cache) > max_entries:
                        old, _ = cache.popitem(last=False)
                        stats[2] -= len(old) + ENTRY_CHARS
            return result

        def cache_info() -> CacheInfo:
            with lock:
                return CacheInfo(stats[0], stats[1], len(cache), stats[2] - len(cache) * ENTRY_CHARS)

        def cache_clear() -> None:
            with lock:
                cache.clear()
                stats[:] = [0, 0, 0]

        cached.cache_info = cache_info  # type: ignore[attr-defined]
        cached.cache_clear = cache_clear  # type: ignore[attr-defined]
        return cached

    return decorate
