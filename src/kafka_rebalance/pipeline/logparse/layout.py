r"""Line layouts: whatever wraps a log message -> ``(time_ms or None, message text)``.

Kafka and its clients log through log4j, logback, Python ``logging`` or librdkafka's own
printer, and users see those lines through docker-compose, kubectl, journald, syslog, JSON
log shippers and CSV exports from CloudWatch or Datadog. Rather than one parser per layout,
a line is first unwrapped (JSON object, CSV row, ANSI colours, CR, no-break spaces, markdown
quote marks), then the message catalogue looks for a known message *anywhere* in it, and the
time is the first timestamp found in the text before the message (or the envelope's own time
field). That reads every prefix layout, including ones never seen, as long as the timestamp
pattern is one of ``TIMESTAMP``'s.

Times without a zone are read as UTC (a broker's log4j times are its local wall clock; the
report shows them as written). Lines without any time keep their file order; ``time_ms`` is
None for them.

Syslog and journald's short layout (``Nov 23 14:00:01``) print no year. A line that carries a
full timestamp as well (log4j's, after the syslog prefix) takes that one. Otherwise the time
gets the latest year that puts it no later than the *syslog reference* (``SyslogReference``,
an argument of every function here that reads a time: ``logs`` decides it once, the start of
the run or the end of the day or year given with ``--year``): a log read
within a year of being written gets its real year, and a story that crosses New Year stays in
order (Dec 31 of last year, then Jan 1 of this year) instead of running backwards.
"""

from __future__ import annotations

import calendar
import csv
import functools
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
NO_BREAK_SPACES = str.maketrans({"\u00a0": " ", "\u2007": " ", "\u202f": " ", "\ufeff": ""})
FENCE = re.compile(r"^\s*(```|~~~)")
QUOTE_MARKS = re.compile(r"^(?:\s*>)+\s?")

_MONTHS = {name: i for i, name in enumerate(calendar.month_abbr) if name}

# The first of these found before the message is the line's time. Named alternatives so one
# search finds the earliest timestamp of any form.
_ISO_PATTERN = (r"(?P<iso>(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
                r"(?:[.,](?P<frac>\d{1,9}))?(?:\s?(?P<zone>Z|UTC|[+-]\d{2}:?\d{2})(?![\d:]))?)")
TIMESTAMP = re.compile(
    _ISO_PATTERN
    + r"|(?P<short>\b(?P<sy>\d{2})/(?P<smo>\d{2})/(?P<sd>\d{2}) (?P<sh>\d{2}):(?P<smi>\d{2}):(?P<ss>\d{2})"
    r"(?:[.,](?P<sfrac>\d{1,3}))?)"
    r"|(?P<rdk>%\d\|(?P<epoch_s>\d{9,10})\.(?P<epoch_frac>\d{3})\|)"
    r"|(?P<syslog>\b(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(?P<md>\d{1,2}) "
    r"(?P<th>\d{2}):(?P<tmi>\d{2}):(?P<ts>\d{2})\b)"
    r"|(?P<epochms>^\"?(?P<ems>1\d{12})\"?(?=[,\s]))"
)
# TIMESTAMP's first alternative alone: where a line starts with it (log4j's layout, with or
# without the bracket), it is what TIMESTAMP finds first, found at a fraction of the cost.
_ISO = re.compile(_ISO_PATTERN)
_SYSLOG_GROUP = TIMESTAMP.groupindex["syslog"]
# A year-less time is placed in one of the years up to this many before the reference's (a
# Feb 29 needs up to 4 to find a leap year).
SYSLOG_YEARS_BACK = 4


@dataclass(frozen=True, slots=True)
class SyslogReference:
    """Year-less syslog times are placed no later than ``until_ms`` (epoch ms): each gets the
    latest year that does so. Every function that reads a time takes one; the caller decides
    it once per run (``logs``: the run's start, or the end of ``--year``)."""

    until_ms: int
    year: int = field(init=False)  # ``until_ms``'s UTC year

    def __post_init__(self) -> None:
        object.__setattr__(self, "year", datetime.fromtimestamp(self.until_ms / 1000, UTC).year)

    @classmethod
    def from_year_option(cls, value: str) -> SyslogReference:
        """``--year``: ``YYYY`` or ``YYYY-MM-DD`` -> the end of that year or day."""
        return cls(parse_year_option(value))


def parse_year_option(value: str) -> int:
    """``--year``: ``YYYY`` or ``YYYY-MM-DD`` -> the syslog reference, the last millisecond of
    that year or day (UTC). Raises ValueError for anything else."""
    text = value.strip()
    if re.fullmatch(r"\d{4}", text):
        end = datetime(int(text) + 1, 1, 1, tzinfo=UTC)
    elif re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
        end = datetime.fromordinal(day.toordinal() + 1).replace(tzinfo=UTC)
    else:
        raise ValueError(f"{value!r}: give a year (2024) or the date of the log's last day (2024-01-02)")
    return int(end.timestamp() * 1000) - 1


def _syslog_ms(month: int, day: int, hour: int, minute: int, second: int, syslog: SyslogReference) -> int | None:
    for candidate in range(syslog.year, syslog.year - SYSLOG_YEARS_BACK - 1, -1):
        moment = _utc_ms(candidate, month, day, hour, minute, second)
        if moment is not None and moment <= syslog.until_ms:
            return moment
    return None


def _fraction_ms(text: str | None) -> int:
    return int((text or "0").ljust(3, "0")[:3])


def _zone_offset_ms(zone: str | None) -> int:
    if not zone or zone in ("Z", "UTC"):
        return 0
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    return sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60) * 1000


@functools.lru_cache(maxsize=4096)
def _utc_ms(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int | None:
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None
    return int(moment.timestamp()) * 1000


@functools.lru_cache(maxsize=4096)
def _iso_second_ms(text: str) -> int | None:
    """``yyyy-MM-dd HH:mm:ss`` (or with ``T``) -> epoch ms, UTC; None for an impossible date."""
    return _utc_ms(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]),
                   int(text[17:19]))


_MILLIS = {f"{n:03d}": n for n in range(1000)}


def _iso_ms(match: re.Match[str]) -> int | None:
    iso, frac, zone = match.group("iso", "frac", "zone")
    base = _iso_second_ms(iso[:19])
    if base is None:
        return None
    if frac:
        millis = _MILLIS.get(frac)
        base += _fraction_ms(frac) if millis is None else millis
    return base - _zone_offset_ms(zone) if zone else base


def timestamp_ms(match: re.Match[str], syslog: SyslogReference) -> int | None:
    """Epoch milliseconds of a ``TIMESTAMP`` match (UTC unless the text names a zone)."""
    g = match.group
    if g("iso"):
        return _iso_ms(match)
    if g("short"):
        base = _utc_ms(2000 + int(g("sy")), int(g("smo")), int(g("sd")), int(g("sh")), int(g("smi")), int(g("ss")))
        return None if base is None else base + _fraction_ms(g("sfrac"))
    if g("rdk"):
        return int(g("epoch_s")) * 1000 + int(g("epoch_frac"))
    if g("syslog"):
        return _syslog_ms(_MONTHS[g("mon")], int(g("md")), int(g("th")), int(g("tmi")), int(g("ts")), syslog)
    if g("epochms"):
        return int(g("ems"))
    return None


def find_time(text: str, syslog: SyslogReference) -> int | None:
    # No alternative of TIMESTAMP can start at a '[': a line starting with an ISO time, bare
    # or in brackets, has that time first.
    iso = _ISO.match(text, 1) if text[:1] == "[" else _ISO.match(text)
    if iso is not None:
        return _iso_ms(iso)
    match = TIMESTAMP.search(text)
    if match is None:
        return None
    if match.lastindex == _SYSLOG_GROUP:
        # syslog's prefix, then the application's own full timestamp: the full one has the year
        for later in TIMESTAMP.finditer(text, match.end()):
            full = None if later.lastindex == _SYSLOG_GROUP else timestamp_ms(later, syslog)
            if full is not None:
                return full
    return timestamp_ms(match, syslog)


_JSON_MESSAGE_KEYS = ("message", "msg", "log", "MESSAGE", "Message", "@message", "text")
_JSON_TIME_KEYS = ("@timestamp", "timestamp", "time", "ts", "_time", "Timestamp", "date", "__REALTIME_TIMESTAMP")


def _json_time(value: object, syslog: SyslogReference) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        number = float(value)
        # seconds, milliseconds or microseconds since the epoch (journald exports microseconds)
        if number > 1e14:
            return int(number / 1000)
        if number > 1e11:
            return int(number)
        return int(number * 1000)
    if isinstance(value, str):
        if value.isdigit():
            return _json_time(int(value), syslog)
        return find_time(value, syslog)
    return None


def unwrap_json(line: str, syslog: SyslogReference) -> tuple[str, int | None] | None:
    """A JSON-structured line -> (its message, its time field in ms or None); None if the line
    is not a JSON object with a message."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    message = next((record[k] for k in _JSON_MESSAGE_KEYS if isinstance(record.get(k), str)), None)
    if message is None:
        return None
    time_ms = next((t for t in (_json_time(record.get(k), syslog) for k in _JSON_TIME_KEYS) if t is not None), None)
    # docker's json-file driver: {"log": "<the container's line>\n", "time": ...}; the inner
    # line carries its own layout, possibly JSON again.
    message = message.rstrip("\n")
    if message.startswith("{"):
        inner = unwrap_json(message, syslog)
        if inner is not None:
            return inner[0], inner[1] if inner[1] is not None else time_ms
    return message, time_ms


def unwrap_csv(line: str, syslog: SyslogReference) -> tuple[str, int | None] | None:
    """A CSV export row (CloudWatch: ``timestamp,message``; Datadog: ``Date,Host,Service,
    Message``) -> (the longest field, the first field's time); None when not a quoted CSV row."""
    try:
        fields = next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return None
    if len(fields) < 2:
        return None
    message = max(fields, key=len)
    time_ms = next((t for t in (find_time(f, syslog) for f in fields if f is not message and len(f) < 40) if t is not None),
                   None)
    return message, time_ms


def clean(line: str) -> str:
    """Remove what a terminal, a paste or Windows added: ANSI colours, CR, no-break spaces,
    markdown quote marks."""
    if "\x1b" in line:
        line = ANSI.sub("", line)
    line = line.rstrip("\r\n")
    if not line.isascii():
        line = line.translate(NO_BREAK_SPACES)
    if line.lstrip().startswith(">"):
        line = QUOTE_MARKS.sub("", line)
    return line


def unwrap(line: str, syslog: SyslogReference) -> tuple[str, int | None, str]:
    """A raw line -> (text to search for a message, envelope time or None, envelope name:
    ``json``, ``csv`` or ``text``)."""
    if line[:1] == "[" and "\x1b" not in line and line.isascii():
        # log4j's layout, the common case: nothing for ``clean`` to do but the line end
        return line.rstrip("\r\n"), None, "text"
    line = clean(line)
    stripped = line.lstrip()
    if stripped.startswith("{") and stripped.rstrip().endswith("}"):
        unwrapped = unwrap_json(stripped, syslog)
        if unwrapped is not None:
            return clean(unwrapped[0]), unwrapped[1], "json"
    if '"' in stripped and "," in stripped and (stripped.startswith('"') or stripped[:1].isdigit()):
        first = stripped.split(",", 1)[0].strip('"')
        if find_time(first, syslog) is not None or first.isdigit():
            unwrapped = unwrap_csv(stripped, syslog)
            if unwrapped is not None:
                return clean(unwrapped[0]), unwrapped[1], "csv"
    return line, None, "text"


def is_fence(line: str) -> bool:
    # ``FENCE`` without the regex: str.lstrip and the regex's \s strip the same characters
    return line.lstrip().startswith(_FENCE_MARKS)


_FENCE_MARKS = ("```", "~~~")
