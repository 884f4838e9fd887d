"""The two Data Bridge services as data, read from `databridge.thrift`.

The IDL file is the single source of truth for method names, argument field ids and the
result field id of every declared exception; this module loads it with `thriftpy2.load`
and turns it into small tables that the hand-written codec (`messages`) and the service
(`service`) use. thriftpy2's own structs are not used on the hot path: the bundle codec is
faster and bounds every length (see `bundle_codec`). Imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import thriftpy2

IDL_PATH = Path(__file__).with_name("databridge.thrift")
PLAIN_SERVICE = "ThriftEventTransmissionService"
SECURE_SERVICE = "ThriftSecureEventTransmissionService"


@dataclass(frozen=True)
class Method:
    """One service method: argument fields, the success type and the declared exceptions."""

    name: str
    args: dict[int, tuple[int, str]]
    success: int | None
    throws: dict[str, int]
    exception_types: dict[str, str]


@dataclass(frozen=True)
class Service:
    name: str
    methods: dict[str, Method]


@cache
def module() -> ModuleType:
    """The IDL loaded by thriftpy2 (structs usable for cross-checks and tests)."""
    return thriftpy2.load(str(IDL_PATH), module_name="databridge_thrift")


def _method(service: object, name: str) -> Method:
    args_spec = getattr(service, f"{name}_args").thrift_spec
    result_spec = getattr(service, f"{name}_result").thrift_spec
    args = {fid: (spec[0], spec[1]) for fid, spec in args_spec.items()}
    success = result_spec[0][0] if 0 in result_spec else None
    throws = {spec[1]: fid for fid, spec in result_spec.items() if fid != 0}
    types = {spec[1]: spec[2].__name__ for fid, spec in result_spec.items() if fid != 0}
    return Method(name, args, success, throws, types)


@cache
def service(name: str) -> Service:
    """`PLAIN_SERVICE` (§3.1) or `SECURE_SERVICE` (§3.2)."""
    svc = getattr(module(), name)
    return Service(name, {m: _method(svc, m) for m in svc.thrift_services})
