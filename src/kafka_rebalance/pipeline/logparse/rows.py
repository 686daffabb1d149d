"""The two record shapes of the logs pipeline. Both are plain dicts: their columns are declared
as data (``parse.EVENT_COLUMNS``, ``tables.TABLES``), a caller may leave optional columns out,
and they cross Spark, pandas and Arrow as rows of those schemas."""

from __future__ import annotations

from typing import Any

#: One log line: the ``EVENT_COLUMNS`` it filled (``parse.parse_line``), values str, int or None.
Event = dict[str, Any]
#: One row of a story table (``tables.TABLES``), of the findings, or of the coverage.
Row = dict[str, Any]
