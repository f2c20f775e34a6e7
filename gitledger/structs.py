"""Plain data classes for the modules a hook loads on every step, without ``dataclasses``.

``gitledger judge step`` runs as a whole process after every step of an agent, and its start-up
is most of its cost (docs/JUDGE.md, "Time"). ``import dataclasses`` loads ``inspect`` (and with
it ``ast``, ``dis``, ``tokenize``) and each ``@dataclass`` compiles five or six methods: measured
here about 5 ms for the import and 0.45 ms a class, against a judged step's 1 ms. ``struct``
builds the same classes for the ~20 records the step's modules define at a fraction of that.

To a type checker ``struct``, ``field``, ``asdict`` and ``replace`` *are* ``dataclasses``'
(imported under ``TYPE_CHECKING``), so mypy checks every record as a dataclass. At run time they
are this module's, with the same behaviour for what the records use: fields in annotation order
(``ClassVar`` left out), defaults and ``field(default=…)``/``field(default_factory=…)``, an
``__init__`` that calls ``__post_init__`` when the class has one, ``__repr__``, ``__eq__``,
``__match_args__``, ``frozen`` (assignment raises ``FrozenInstanceError``, an
``AttributeError``; a frozen class hashes by its fields, a mutable one is unhashable, as a
dataclass's), ``slots``, and ``asdict`` (records, lists, tuples and dicts copied recursively,
anything else deep-copied) and ``replace``. The fields a record has are ``fields_of(cls)``.
``tests/test_structs.py`` holds each of these against ``dataclasses`` itself.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own constant costs a hook ``import typing``
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _T = TypeVar("_T")

_FIELDS = "__struct_fields__"


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


class _Field:
    """What ``field(...)`` puts in the class body until ``struct`` reads it."""

    __slots__ = ("default", "default_factory")

    def __init__(self, default: Any, default_factory: Any) -> None:
        self.default = default
        self.default_factory = default_factory


def _field(*, default: Any = _MISSING, default_factory: Any = _MISSING) -> Any:
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory)


def fields_of(cls: type) -> tuple[str, ...]:
    """The names of a record's fields, in order (a ``struct`` or a dataclass)."""
    names = getattr(cls, _FIELDS, None)
    if names is None:
        import dataclasses  # loaded already where a dataclass exists

        return tuple(item.name for item in dataclasses.fields(cls))
    return tuple(names)


def _is_class_var(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _struct(cls: type | None = None, /, *, frozen: bool = False, slots: bool = False) -> Any:
    def wrap(cls: type) -> type:
        return _build(cls, frozen=frozen, slots=slots)

    return wrap if cls is None else wrap(cls)


def _build(cls: type, *, frozen: bool, slots: bool) -> type:
    names: list[str] = []
    for base in reversed(cls.__mro__[1:]):
        for name in getattr(base, _FIELDS, ()):
            if name not in names:
                names.append(name)
    defaults: dict[str, Any] = {}
    factories: dict[str, Any] = {}
    for base in reversed(cls.__mro__[1:]):
        defaults.update(getattr(base, "__struct_defaults__", {}))
        factories.update(getattr(base, "__struct_factories__", {}))
    own = cls.__dict__.get("__annotations__", {})
    for name, annotation in own.items():
        if _is_class_var(annotation):
            continue
        if name not in names:
            names.append(name)
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, _Field):
            if value.default_factory is not _MISSING:
                factories[name] = value.default_factory
                defaults.pop(name, None)
            elif value.default is not _MISSING:
                defaults[name] = value.default
                factories.pop(name, None)
            if slots or value.default is _MISSING:
                if name in cls.__dict__:
                    delattr(cls, name)
            else:
                setattr(cls, name, value.default)
        elif value is not _MISSING:
            defaults[name] = value
            factories.pop(name, None)
            if slots:
                delattr(cls, name)
    fields = tuple(names)
    seen_default = False
    for name in fields:
        has = name in defaults or name in factories
        if seen_default and not has:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        seen_default = seen_default or has
    if slots:
        body = {
            key: value
            for key, value in cls.__dict__.items()
            if key not in ("__dict__", "__weakref__") and key not in fields
        }
        body["__slots__"] = fields
        cls = type(cls)(cls.__name__, cls.__bases__, body)
    setattr(cls, _FIELDS, fields)
    cls.__struct_defaults__ = dict(defaults)  # type: ignore[attr-defined]
    cls.__struct_factories__ = dict(factories)  # type: ignore[attr-defined]
    cls.__init__ = _make_init(  # type: ignore[misc]
        cls, fields, defaults, factories, frozen=frozen
    )
    if "__repr__" not in cls.__dict__:
        cls.__repr__ = _repr  # type: ignore[assignment,method-assign]
    if "__eq__" not in cls.__dict__:
        cls.__eq__ = _eq  # type: ignore[assignment,method-assign]
    if "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
        cls.__hash__ = _hash if frozen else None  # type: ignore[assignment,method-assign]
    if frozen:
        cls.__setattr__ = _frozen_setattr  # type: ignore[assignment,method-assign]
        cls.__delattr__ = _frozen_delattr  # type: ignore[assignment,method-assign]
        if slots:
            cls.__getstate__ = _getstate  # type: ignore[attr-defined]
            cls.__setstate__ = _setstate  # type: ignore[attr-defined]
    cls.__match_args__ = fields  # type: ignore[attr-defined,misc]
    return cls


def _make_init(
    cls: type,
    fields: tuple[str, ...],
    defaults: dict[str, Any],
    factories: dict[str, Any],
    *,
    frozen: bool,
) -> Callable[..., None]:
    """``__init__``, compiled once for the class: the one method every record calls often."""
    params: list[str] = []
    lines: list[str] = []
    for name in fields:
        if name in factories:
            params.append(f"{name}=_MISSING")
            value = f"_factories[{name!r}]() if {name} is _MISSING else {name}"
        elif name in defaults:
            params.append(f"{name}=_defaults[{name!r}]")
            value = name
        else:
            params.append(name)
            value = name
        if frozen:
            lines.append(f"  _set(self, {name!r}, {value})")
        else:
            lines.append(f"  self.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        lines.append("  self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(lines) or "  pass")
    namespace: dict[str, Any] = {
        "_MISSING": _MISSING,
        "_defaults": defaults,
        "_factories": factories,
        "_set": object.__setattr__,
    }
    exec(source, namespace)  # noqa: S102 - the source is built here from field names
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init


def _values(obj: object) -> tuple[Any, ...]:
    return tuple(getattr(obj, name) for name in getattr(type(obj), _FIELDS))


def _repr(self: object) -> str:
    parts = ", ".join(f"{name}={getattr(self, name)!r}" for name in getattr(type(self), _FIELDS))
    return f"{type(self).__qualname__}({parts})"


def _eq(self: object, other: object) -> object:
    if other.__class__ is self.__class__:
        return _values(self) == _values(other)
    return NotImplemented


def _hash(self: object) -> int:
    return hash(_values(self))


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: object) -> tuple[Any, ...]:
    return _values(self)


def _setstate(self: object, state: tuple[Any, ...]) -> None:
    for name, value in zip(getattr(type(self), _FIELDS), state, strict=True):
        object.__setattr__(self, name, value)


_ATOMS = (str, int, float, bool, bytes, type(None))


def _copied(value: Any) -> Any:
    if isinstance(value, _ATOMS):
        return value
    if hasattr(type(value), _FIELDS):
        return _asdict(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_copied(item) for item in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(item) for item in value)
    if isinstance(value, dict):
        return type(value)((_copied(k), _copied(v)) for k, v in value.items())
    import copy

    return copy.deepcopy(value)


def _asdict(obj: Any) -> dict[str, Any]:
    if not hasattr(type(obj), _FIELDS):
        import dataclasses

        return dataclasses.asdict(obj)
    return {name: _copied(getattr(obj, name)) for name in getattr(type(obj), _FIELDS)}


def _replace(obj: _T, /, **changes: Any) -> _T:
    names = getattr(type(obj), _FIELDS, None)
    if names is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    values = {name: getattr(obj, name) for name in names if name not in changes}
    return type(obj)(**values, **changes)


if TYPE_CHECKING:  # the type checker checks each record as the dataclass it behaves as
    from dataclasses import asdict, field, replace
    from dataclasses import dataclass as struct
else:
    struct, field, asdict, replace = _struct, _field, _asdict, _replace


__all__ = ["FrozenInstanceError", "asdict", "field", "fields_of", "replace", "struct"]
