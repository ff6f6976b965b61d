"""Hold many pydantic models in little memory: a review of a million steps holds a million steps.

Besides its fields, a pydantic model keeps the set of the fields given when it was made (its
``model_fields_set``): 200 to 1,400 bytes each, more than a trace step's own fields. Models of
one class whose every field was given share one such set here. Sharing changes nothing a model
can observe: pydantic only adds names to the set (on assignment; every name is in it already) and
copies it for ``model_copy``; a model with fields left unset keeps its own.

A model's fields live in its ``__dict__``, a dict of its own with room to grow: 464 bytes for a
trace step's twelve fields. ``share_keys`` gives a model instead the dict CPython makes for an
ordinary object's attributes, which keeps only the values and shares its keys with every other
such dict of the class (168 bytes; a million steps hold 270 MB less). It is still a dict with the
same keys in the same order: equality, ``model_dump`` and ``model_copy`` see no difference; an
interpreter that does not share keys gives an ordinary dict, the same contents at the old size.

Names (actors, recipients) and often whole contents (a retried call, a relayed message, a status
line) repeat across a trace's steps: ``Names`` keeps one string per distinct text, and
``LeanSteps`` one list per distinct recipient list and one empty ``raw`` dict per trace (trace
steps are frozen models: nothing changes a step's containers).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from schemas.trace import TraceStep

M = TypeVar("M", bound=BaseModel)

_ALL_GIVEN: dict[type[BaseModel], set[str]] = {}
_KEY_OWNERS: dict[type[BaseModel], type] = {}
_set = object.__setattr__  # pydantic's own way to set its private slots


def share_keys(model: M) -> M:
    """``model`` with its fields in a key-sharing dict (module doc): the attribute dict of a plain
    object of a class kept per model class, filled in the fields' order."""
    cls = type(model)
    owner = _KEY_OWNERS.get(cls)
    if owner is None:
        owner = _KEY_OWNERS[cls] = type(f"{cls.__name__}Fields", (), {"__module__": __name__})
    holder = owner()
    for name, value in model.__dict__.items():
        _set(holder, name, value)
    _set(model, "__dict__", holder.__dict__)
    return model


def share_fields_set(model: M) -> M:
    """``model`` with its set of given fields shared with every other model of its class whose
    every field was given (when all of its were)."""
    cls = type(model)
    given = model.__pydantic_fields_set__
    if len(given) == len(cls.model_fields):
        shared = _ALL_GIVEN.get(cls)
        if shared is None:
            shared = _ALL_GIVEN[cls] = set(cls.model_fields)
        if given is not shared:
            _set(model, "__pydantic_fields_set__", shared)
    return model


def share_fields_sets(model: M) -> M:
    """``share_fields_set`` on a model and every model nested in its fields (lists included)."""
    share_fields_set(model)
    for value in model.__dict__.values():
        if isinstance(value, BaseModel):
            share_fields_sets(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, BaseModel):
                    share_fields_sets(item)
    return model


class Names:
    """One string object per distinct text: the thousandth step of ``ops_07`` holds the same
    ``"ops_07"`` as the first instead of a copy of its own."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        """The kept string equal to ``value`` (``value`` itself when new, or not a string)."""
        if type(value) is not str:
            return value
        return self._seen.setdefault(value, value)


class LeanSteps:
    """Trace steps validated from their stored form, held lean: a step's given-fields set is
    shared (``share_fields_set``), and so are its actor and recipient names, its content when an
    earlier step had the same, its recipient list when another step has an equal one, and its
    ``raw`` when empty."""

    def __init__(self) -> None:
        self.names = Names()
        self._recipients: dict[tuple[str, ...], list[str]] = {}
        self._no_raw: dict[str, Any] = {}

    def step(self, data: dict[str, Any]) -> TraceStep:
        for key in ("actor", "content"):
            if key in data:
                data[key] = self.names(data[key])
        step = share_fields_set(TraceStep.model_validate(data))
        fields = step.__dict__
        if step.recipients:
            names = tuple(self.names(r) for r in step.recipients)
            fields["recipients"] = self._recipients.setdefault(names, list(names))
        if not step.raw:
            fields["raw"] = self._no_raw
        return share_keys(step)
