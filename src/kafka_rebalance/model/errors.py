"""Errors shared by every layer."""


class InvalidInput(ValueError):
    """Input that breaks a documented contract. The message is one line naming the field."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}" if field else problem)
