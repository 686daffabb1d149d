"""Array helpers the story over columns shares: neighbours compared, values coded, ranks within runs, running minima per run, nulls and empty strings as Python's ``or`` reads them."""

from __future__ import annotations

from typing import Any

import numpy as np

# Later than any time in a log (epoch ms): none yet.
NO_TIME = 1 << 45


def changes(table: Any, names: tuple[str, ...]) -> np.ndarray:
    """Where a row's values of ``names`` differ from the row before (the first row: True)."""
    import pyarrow.compute as pc

    count = table.num_rows
    if not count:
        return np.zeros(0, bool)
    differs = np.zeros(count - 1, bool)
    for name in names:
        after, before = table.column(name).slice(1), table.column(name).slice(0, count - 1)
        one_null = pc.xor(after.is_null(), before.is_null())
        differs |= pc.fill_null(pc.not_equal(after, before), one_null).to_numpy(zero_copy_only=False)
    return np.concatenate([[True], differs])



def falsy(values: Any) -> np.ndarray:
    """Null or empty: what Python's ``or`` passes over."""
    import pyarrow.compute as pc

    empty: np.ndarray = pc.fill_null(pc.equal(values, ""), True).to_numpy(zero_copy_only=False)
    return empty



def overwrite(values: Any, at: np.ndarray, replacement: Any) -> Any:
    """``values`` with those at ``at`` replaced by ``replacement``'s, in order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not len(at):
        return values
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    replacement = replacement.combine_chunks() if isinstance(replacement, pa.ChunkedArray) else replacement
    mask = np.zeros(len(values), bool)
    mask[at] = True
    # replace_with_mask takes the replacements in the order of the mask's true places
    order = np.argsort(at, kind="stable")
    return pc.replace_with_mask(values, pa.array(mask), replacement.take(pa.array(order)))



def concat(parts: list[Any]) -> Any:
    import pyarrow as pa

    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    arrays = [part.combine_chunks() if isinstance(part, pa.ChunkedArray) else part for part in parts]
    kind = next((array.type for array in arrays if array.type != pa.null()), pa.string())
    return pa.concat_arrays([array.cast(kind) for array in arrays])



def as_array(values: Any) -> Any:
    """One Arrow array of ``values`` (a chunked one combined)."""
    import pyarrow as pa

    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values



def map_strings(values: Any, mapping: dict[str, str]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = list(mapping)
    return pc.take(pa.array([mapping[key] for key in keys], pa.string()), pc.index_in(values, pa.array(keys)))



def map_numbers(values: Any, mapping: dict[str, int]) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = list(mapping)
    index = pc.fill_null(pc.index_in(values, pa.array(keys)), len(keys)).to_numpy(zero_copy_only=False)
    numbers: np.ndarray = np.array([*mapping.values(), 0])[index]
    return numbers



def codes_of(values: Any) -> np.ndarray:
    """Each value's number among the distinct values (null: -1)."""
    import pyarrow.compute as pc

    codes: np.ndarray = pc.fill_null(pc.dictionary_encode(as_array(values)).indices, -1).to_numpy(zero_copy_only=False)
    return codes.astype(np.int64)



def rank_within(place: np.ndarray) -> np.ndarray:
    """Each item's rank among those of the same ``place`` (sorted), from 0."""
    index = np.arange(len(place))
    first = np.ones(len(place), bool)
    first[1:] = place[1:] != place[:-1]
    rank: np.ndarray = index - np.maximum.accumulate(np.where(first, index, 0))
    return rank



def segmented_minimum(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """The running minimum of ``values`` (0 <= value < ``NO_TIME``, or -1) within each run of
    equal ``segment``: each run shifted below every run before it, so one accumulation serves all."""
    if not len(values):
        return values
    run = np.cumsum(np.concatenate([[False], segment[1:] != segment[:-1]]))
    shift = run.astype(np.int64) * (NO_TIME + 2)
    out: np.ndarray = np.minimum.accumulate(values - shift) + shift
    return out



def pair_key(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """(group, time) as one sortable integer: the group above every time (epoch ms below 2**44,
    the year 2527)."""
    key: np.ndarray = group.astype(np.int64) * (1 << 44) + value.astype(np.int64)
    return key



def counts_of(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """How many times each of ``values`` is in ``among``."""
    distinct, counts = np.unique(among, return_counts=True)
    found = np.searchsorted(distinct, values)
    inside = found < len(distinct)
    hit = inside & (np.append(distinct, -1)[found] == values)
    counted: np.ndarray = np.where(hit, np.append(counts, 0)[found], 0)
    return counted



def table_of(columns: dict[str, Any], schema: Any) -> Any:
    import pyarrow as pa

    return pa.Table.from_arrays([as_array(columns[field.name]).cast(field.type) for field in schema], schema=schema)


def longs(values: np.ndarray) -> Any:
    """Float64 values (whole numbers, NaN for none) as an Arrow int64 array with nulls."""
    import pyarrow as pa

    return pa.array(np.nan_to_num(values, nan=0).astype(np.int64), pa.int64(), mask=np.isnan(values))
