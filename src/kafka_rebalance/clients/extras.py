"""Which optional extra of kafka-rebalance brings which third-party module, so a command or
import that needs a missing one can say what to install in one line."""

from __future__ import annotations

import importlib.util

# Top-level module -> the extra that installs it (pyproject.toml [project.optional-dependencies]).
EXTRA_OF_MODULE = {
    "kafka": "kafka",
    "aiokafka": "kafka",
    "pyspark": "spark",
    "pandas": "spark",
    "matplotlib": "spark",
    "kio": "serve",
    "crc32c": "serve",
}


class MissingExtra(ImportError):
    def __init__(self, module: str, extra: str, what: str | None = None):
        self.module, self.extra = module, extra
        super().__init__(f"{what or module} is not installed: pip install 'kafka-rebalance[{extra}]'", name=module)


def require(module: str, what: str | None = None) -> None:
    """Raise ``MissingExtra`` naming the extra when ``module`` cannot be imported."""
    if importlib.util.find_spec(module) is None:
        raise MissingExtra(module, EXTRA_OF_MODULE.get(module, "kafka"), what)


def missing_extra_message(exc: ImportError) -> str | None:
    """One line for an ImportError of a module some extra provides, else None."""
    if isinstance(exc, MissingExtra):
        return str(exc)
    name = (getattr(exc, "name", None) or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(name)
    if extra is None:
        return None
    return f"{name} is not installed: pip install 'kafka-rebalance[{extra}]'"
