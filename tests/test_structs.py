"""``gitledger.structs`` behaves as ``dataclasses`` does for what the records use: each check runs
the same class body through both and compares."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any, ClassVar

import pytest

from gitledger import structs


def _pair(**options: Any) -> tuple[Any, Any]:
    """The same record as a dataclass and as a struct."""

    def body() -> dict[str, Any]:
        return {
            "__annotations__": {
                "a": "int",
                "b": "str",
                "c": "list[int]",
                "d": "tuple[int, ...]",
                "kind": "ClassVar[str]",
            },
            "b": "x",
            "kind": "record",
            "__module__": __name__,
        }

    def make(decorator: Any, fld: Any) -> Any:
        namespace = body()
        namespace["c"] = fld(default_factory=list)
        namespace["d"] = fld(default=(1, 2))
        return decorator(**options)(type("Rec", (), namespace))

    return make(dataclasses.dataclass, dataclasses.field), make(structs.struct, structs.field)


@pytest.mark.parametrize(
    "options", [{}, {"frozen": True}, {"slots": True}, {"frozen": True, "slots": True}]
)
def test_a_struct_behaves_as_the_dataclass(options: dict[str, Any]) -> None:
    real, ours = _pair(**options)
    for cls in (real, ours):
        one, two = cls(1), cls(1, "y", [3], (4,))
        assert (one.a, one.b, one.c, one.d) == (1, "x", [], (1, 2))
        assert one.c is not cls(1).c  # a fresh default each time
        assert one == cls(1) and one != two and one != (1, "x", [], (1, 2))
        assert cls.__match_args__ == ("a", "b", "c", "d")
        assert cls.kind == "record"
        with pytest.raises(TypeError):
            cls()
        with pytest.raises(TypeError):
            cls(1, unknown=2)
    assert repr(ours(1, "y")) == repr(real(1, "y"))
    assert ("__slots__" in ours.__dict__) == ("__slots__" in real.__dict__)
    assert hasattr(ours(1), "__dict__") == hasattr(real(1), "__dict__")
    if options.get("frozen"):
        assert hash(ours(1, c=())) == hash(ours(1, c=())) == hash(real(1, c=()))
        with pytest.raises(AttributeError):
            ours(1).a = 2
        with pytest.raises(structs.FrozenInstanceError):
            del ours(1).a
    else:
        with pytest.raises(TypeError):
            hash(ours(1))
        record = ours(1)
        record.a = 2
        assert record.a == 2
    record = ours(1, "y", [3])
    assert copy.deepcopy(record) == record and copy.copy(record) == record
    assert structs.fields_of(ours) == structs.fields_of(real) == ("a", "b", "c", "d")


def test_asdict_and_replace_match_dataclasses() -> None:
    @structs.struct(frozen=True)
    class Inner:
        x: int
        tags: list[str] = structs.field(default_factory=list)

    @structs.struct
    class Outer:
        inner: Inner
        many: list[Inner]
        by_name: dict[str, Inner]
        pair: tuple[Inner, int]
        other: Any = None

    @dataclasses.dataclass(frozen=True)
    class RealInner:
        x: int
        tags: list[str] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass
    class RealOuter:
        inner: RealInner
        many: list[RealInner]
        by_name: dict[str, RealInner]
        pair: tuple[RealInner, int]
        other: Any = None

    payload = {"deep": [1, {"k": "v"}]}
    ours = Outer(Inner(1, ["t"]), [Inner(2)], {"n": Inner(3)}, (Inner(4), 5), payload)
    real = RealOuter(
        RealInner(1, ["t"]), [RealInner(2)], {"n": RealInner(3)}, (RealInner(4), 5), payload
    )
    assert structs.asdict(ours) == dataclasses.asdict(real)
    assert structs.asdict(ours)["other"] is not payload  # copied, as dataclasses does
    changed = structs.replace(ours, other=1)
    assert changed.other == 1 and changed.inner is ours.inner and ours.other is payload
    with pytest.raises(TypeError):
        structs.replace(ours, unknown=1)
    # A real dataclass given to them is handed to dataclasses.
    assert structs.asdict(real) == dataclasses.asdict(real)
    assert structs.replace(real, other=2).other == 2


def test_post_init_subclass_and_field_order() -> None:
    @structs.struct
    class Base:
        a: int
        b: int = 2

        def __post_init__(self) -> None:
            self.seen = self.a + self.b

    @structs.struct
    class Child(Base):
        c: int = 3

    child = Child(1)
    assert (child.a, child.b, child.c, child.seen) == (1, 2, 3, 3)
    assert structs.fields_of(Child) == ("a", "b", "c")
    with pytest.raises(TypeError, match="non-default argument"):

        @structs.struct
        class Wrong:
            a: int = 1
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError):
        structs.field(default=1, default_factory=list)


@structs.struct(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    kind: ClassVar[str] = "point"


@structs.struct
class Bag:
    items: list[Point] = structs.field(default_factory=list)


def test_records_pickle() -> None:
    for record in (Point(1, 2), Bag([Point(3)])):
        assert pickle.loads(pickle.dumps(record)) == record
