"""One rule for every command: bad input is one line on stderr and exit status 2."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml

from kafka_rebalance.model import InvalidInput

T = TypeVar("T")
EXIT_BAD_INPUT = 2


def fail(message: str) -> click.exceptions.Exit:
    sys.stderr.write(f"kafka-rebalance: {message}\n")
    return click.exceptions.Exit(EXIT_BAD_INPUT)


@contextmanager
def bad_input_exits() -> Iterator[None]:
    """Turn the errors of bad input into one line on stderr and exit 2 (never a traceback)."""
    try:
        yield
    except InvalidInput as exc:
        raise fail(str(exc)) from None
    except FileNotFoundError as exc:
        raise fail(f"{exc.filename}: no such file") from None
    except IsADirectoryError as exc:
        raise fail(f"{exc.filename}: is a directory") from None
    except PermissionError as exc:
        raise fail(f"{exc.filename}: permission denied") from None
    except UnicodeDecodeError:
        raise fail("input is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise fail(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise fail(f"invalid YAML{where}: {problem}") from None


def read_text(path: str) -> str:
    """Read a file, or standard input for '-'."""
    if path == "-":
        return sys.stdin.read()
    return Path(path).read_text(encoding="utf-8")


def load_json(path: str) -> Any:
    return json.loads(read_text(path))


def guarded(func: Callable[..., T]) -> Callable[..., T]:
    """Decorator form of ``bad_input_exits``."""

    def wrapper(*args: Any, **kwargs: Any) -> T:
        with bad_input_exits():
            return func(*args, **kwargs)

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper
