"""`conf/cepheus.toml` documents every configuration key, with the built-in default as its value."""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from app import config as app_config
from app.config import Config

CONF = Path(__file__).resolve().parents[3] / "conf" / "cepheus.toml"


def config_keys(cls: type[Any] = Config, prefix: str = "") -> Iterator[str]:
    """`section.key` of every leaf of the configuration dataclasses."""
    for f in dataclasses.fields(cls):
        kind = f.default_factory if f.default_factory is not dataclasses.MISSING else None
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            yield from config_keys(kind, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}"


def file_keys(table: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in table.items():
        if isinstance(value, Mapping):
            yield from file_keys(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def test_the_walk_finds_keys_of_every_section() -> None:
    keys = set(config_keys())
    assert {"node.port_offset", "registry.url", "thrift.port", "ha.lease_ms"} <= keys
    assert {f.name for f in dataclasses.fields(Config)} == {key.split(".")[0] for key in keys}


def test_every_key_of_the_config_is_in_conf_cepheus_toml() -> None:
    with CONF.open("rb") as f:
        documented = set(file_keys(tomllib.load(f)))
    missing = [key for key in config_keys() if key not in documented]
    assert missing == [], f"add these keys to {CONF} (with their default values): {missing}"


def test_conf_cepheus_toml_loads_and_gives_the_defaults() -> None:
    assert app_config.load(CONF, env={}) == Config()
