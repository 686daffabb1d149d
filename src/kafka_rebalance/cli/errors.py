"""One rule for every command: bad input is one line on stderr and exit status 2."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click
import yaml

from kafka_rebalance.cli import inputs
from kafka_rebalance.model import InvalidInput

EXIT_BAD_INPUT = 2


def one_line(message: str) -> str:
    """The first line of ``message``, printable whatever the input held (lone surrogates from a
    JSON escape, control characters)."""
    lines = message.strip().splitlines()
    line = lines[0] if lines else ""
    line = line.encode("utf-8", "backslashreplace").decode("utf-8")
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in line)


def fail(message: str) -> click.exceptions.Exit:
    sys.stderr.write(f"kafka-rebalance: {one_line(message) or 'bad input'}\n")
    return click.exceptions.Exit(EXIT_BAD_INPUT)


@contextmanager
def bad_input_exits(source: str | None = None) -> Iterator[None]:
    """Turn the errors of bad input into one line on stderr and exit 2 (never a traceback).

    ``source``: the user's path the input came from; put in front of a field that does not
    already name a file.
    """
    try:
        yield
    except InvalidInput as exc:
        # A field of standard input needs no file name in front of it.
        named = exc if source is None or source == inputs.STDIN else inputs.with_source(exc, source)
        raise fail(str(named)) from None
    except FileNotFoundError as exc:
        raise fail(f"{exc.filename or source}: no such file") from None
    except IsADirectoryError as exc:
        raise fail(f"{exc.filename or source}: is a directory") from None
    except NotADirectoryError as exc:
        raise fail(f"{exc.filename or source}: a parent is not a directory") from None
    except PermissionError as exc:
        raise fail(f"{exc.filename or source}: permission denied") from None
    except UnicodeDecodeError:
        raise fail(f"{source or 'input'}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise fail(f"{source or 'input'}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise fail(f"{source or 'input'}: invalid YAML{where}: {problem}") from None
    except MemoryError:
        raise fail(f"{source or 'input'}: too large to hold in memory") from None
    except RecursionError:
        raise fail(f"{source or 'input'}: nested too deeply") from None
