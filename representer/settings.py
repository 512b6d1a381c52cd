"""The checks of the settings objects of runs and exports (`TaggerSettings`, `AuditSettings`,
`ExportSettings`): a wrong value is a ValueError that names its field, raised when the object is
made, before anything runs."""

from __future__ import annotations

from collections.abc import Collection


def check_at_least(settings: object, minimum: float, *fields: str) -> None:
    """Refuse `settings` where one of its `fields` is below `minimum`; a field left None (a default
    chosen later) passes."""
    for name in fields:
        value = getattr(settings, name)
        if value is not None and value < minimum:
            raise ValueError(f"{name} must be at least {minimum}, got {value!r}")


def check_one_of(settings: object, field: str, choices: Collection[str]) -> None:
    """Refuse `settings` where `field` is not one of `choices`."""
    value = getattr(settings, field)
    if value not in choices:
        raise ValueError(f"{field} must be one of {', '.join(choices)}, got {value!r}")
