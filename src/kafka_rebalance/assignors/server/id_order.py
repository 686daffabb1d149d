"""Member ids in Java string order (``String.compareTo``), as ``RangeAssignor.sortMemberIds``
sorts them, computed on arrays for large groups.

CPython's ``sorted(range(n), key=ids.__getitem__)`` compares strings one pair at a time, then the
answer must be turned into an array: about 0.6 ms for 10,000 of Kafka's JMH ids (``member0``...,
nearly in order already) on these cores, as much as the rest of ``range`` on such a group, and
2.3 ms for 10,000 random 22-character ids (Kafka's own, ``Uuid``-based). Here the ids become
integers and the sort is one integer argsort (timsort for keys nearly in order, introsort for
the others): the ids joined by NULs and cut at the NULs; the prefix every id shares skipped
(it decides no comparison: JMH's ``member``); then the next 8 bytes of each id, zero after its
end (a shorter id sorts before any longer one it prefixes, as in Java), read as one big-endian
integer. That integer tells the ids apart when what follows the prefix is short (JMH's numbers)
or random (Kafka's ids); where two ids longer than that share it, ``np.lexsort`` over every 8
bytes of the rest. Only for ASCII ids (where Python's, Java's and byte order agree) without
NULs; the caller falls back otherwise. For 10,000 ids: 0.54 ms (JMH's) and 0.53 ms (random)
against CPython's 0.56 ms and 2.3 ms (``benchmarks/id_order.py``, 2026-12-06).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# From this many ids the array sort is used: below, CPython's sort of JMH's ids (0.1 ms for
# 1,000) is as fast as its two dozen numpy calls (random ids gain from 1,000, JMH's do not).
ARRAY_SORT_MIN_IDS = 2000

_WORD = 8  # bytes per integer key
# Keys with fewer descents than one in this many are sorted by timsort, the others by introsort.
_FEW_DESCENTS = 16
# _KEEP[k]: a mask keeping the first k bytes of a big-endian word.
_KEEP = np.array([((1 << (8 * k)) - 1) << (8 * (_WORD - k)) for k in range(_WORD + 1)], dtype=np.uint64)


def ascii_id_order(ids: Sequence[str]) -> np.ndarray | None:
    """The argsort of ``ids`` in string order, equal ids in index order; None unless every id
    is ASCII without a NUL character."""
    n = len(ids)
    joined = "\x00".join(ids)
    if not n or not joined.isascii():
        return None
    # Whole words, with at least one word of zeros after the last id.
    data = np.zeros((len(joined) // _WORD + 2) * _WORD, dtype=np.uint8)
    data[: len(joined)] = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    separators = np.flatnonzero(data[: len(joined)] == 0)
    if len(separators) != n - 1:  # an id holds a NUL itself
        return None
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = separators + 1
    lengths = np.empty(n, dtype=np.int64)
    lengths[:-1] = separators
    lengths[-1] = len(joined)
    lengths -= starts
    words = data.view(">u8")
    while True:  # skip the prefix every id shares, a word at a time
        key = _word_at(words, starts, lengths)
        differing = int(np.bitwise_or.reduce(key ^ key[0]))
        if differing:
            shared = (_WORD * 8 - differing.bit_length()) // 8
            break
        if int(lengths.min()) < _WORD:  # every id is the same
            return np.arange(n, dtype=np.int64)
        starts += _WORD
        lengths -= _WORD
    if shared:
        starts += shared
        lengths -= shared
        key = _word_at(words, starts, lengths)
    # numpy's stable sort (timsort) merges the runs already in order: ids that mostly come in
    # their own order (JMH's member0, member1...) sort in a fifth of the time introsort takes.
    # On ids in no order (Kafka's own, random) introsort takes a quarter of timsort's time, and
    # distinct keys have one order whichever sort finds it: only tied keys need the stable one.
    in_order = np.count_nonzero(key[1:] < key[:-1]) * _FEW_DESCENTS < n
    order: np.ndarray = np.argsort(key, kind="stable" if in_order else "quicksort")
    ranked = key[order]
    tied = ranked[1:] == ranked[:-1]
    if not tied.any():
        return order
    if not in_order:
        order = np.argsort(key, kind="stable")
        ranked = key[order]
        tied = ranked[1:] == ranked[:-1]
    # Ids sharing the first word are equal if one ends within it (the other then ends there too).
    if int(lengths[order[1:]][tied].max()) < _WORD:
        return order
    rest = [key]
    while len(rest) * _WORD < int(lengths.max()):
        rest.append(_word_at(words, starts + len(rest) * _WORD, lengths - len(rest) * _WORD))
    by_words: np.ndarray = np.lexsort(rest[::-1])
    return by_words


def _word_at(words: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The 8 bytes of each id from ``starts`` as a native integer, zero past its ``lengths``:
    the aligned big-endian ``words`` around them shifted together (an unaligned view would be
    copied whole by numpy before the gather). An id already ended may start past the data: it
    reads the last words, then is zeroed."""
    starts = np.minimum(starts, (len(words) - 1) * _WORD - 1)  # the next word still in bounds
    index = starts >> 3
    shift = ((starts & 7) << 3).astype(np.uint64)
    high: np.ndarray = words[index].astype(np.uint64)
    high <<= shift
    low = words[index + 1].astype(np.uint64)
    low >>= np.uint64(1)  # then by 63 - shift: by 64 - shift in all, 64 (nothing left) for shift 0
    low >>= np.uint64(63) - shift
    high |= low
    high &= _KEEP[np.minimum(np.maximum(lengths, 0), _WORD)]
    return high
