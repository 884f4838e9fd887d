"""Each package's errors form one tree under `engine.errors.CEPError` (STYLE.md, Errors), drawn
in the package's `errors.py`, so the CLI and the console catch one base per package."""

from __future__ import annotations

import pytest

from app.console.actions import ApiError
from app.console.entities import EntityError
from app.console.errors import ConsoleError, OnDemandRefused
from app.node.errors import NodeError, UnknownPlan
from app.persistence.errors import DiskFault, InputLogError
from app.persistence.records import RecordError, decode
from app.persistence.segments import SegmentDamaged
from app.registry.errors import RegistryError
from app.registry.substitution import SubstitutionError
from app.registry.toml_writer import TomlWriteError
from app.replay import ReplayError
from engine.errors import CEPError

TREES = [
    (ReplayError, CEPError),
    (RecordError, InputLogError),
    (DiskFault, InputLogError),
    (SegmentDamaged, InputLogError),
    (SubstitutionError, RegistryError),
    (TomlWriteError, RegistryError),
    (ApiError, ConsoleError),
    (EntityError, ConsoleError),
    (OnDemandRefused, ConsoleError),
    (UnknownPlan, NodeError),
]


@pytest.mark.parametrize(("error", "base"), TREES, ids=[error.__name__ for error, _ in TREES])
def test_an_error_sits_under_its_package_base(error: type[Exception], base: type[Exception]) -> None:
    assert issubclass(error, base)
    assert issubclass(base, CEPError)


def test_a_payload_that_does_not_decode_says_so_before_why() -> None:
    with pytest.raises(RecordError) as caught:
        decode(b"\x09" + bytes(20))
    assert str(caught.value).startswith("payload does not decode: unknown record kind 9")
