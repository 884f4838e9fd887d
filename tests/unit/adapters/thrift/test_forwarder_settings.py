"""WSO2Event adapter properties (§10) become forwarder settings; mistakes name the property."""

from __future__ import annotations

import pytest

from adapters.thrift.definitions import WireStreamDefinition
from adapters.thrift.forwarder import ForwarderSettings, Wso2EventForwarder
from engine.errors import AdapterError, ConfigError

PROPERTIES = {"receiverURL": "tcp://h:7611", "username": "admin", "password": "admin"}
OUT = WireStreamDefinition("deliveredOrders", payload=(("sumOrderId", "LONG"), ("customerName", "STRING")))


def test_cep_properties_become_settings() -> None:
    settings = ForwarderSettings.from_properties(
        {
            **PROPERTIES,
            "authenticatorURL": "ssl://h:7711",
            "stream": "DeliveredEventStream",
            "protocol": "thrift",
        },
        buffer_events=5,
    )
    assert settings.receiver_url == "tcp://h:7611" and settings.authenticator_url == "ssl://h:7711"
    assert settings.stream == "DeliveredEventStream" and settings.version is None
    assert settings.buffer_events == 5


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({**PROPERTIES, "receiverUrl": "tcp://x:1"}, "unknown wso2event property 'receiverUrl'"),
        ({"receiverURL": "tcp://h:7611", "username": "admin"}, "password is required"),
        ({**PROPERTIES, "protocol": "binary"}, "only 'thrift'"),
    ],
)
def test_bad_properties_are_configuration_errors(properties: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ForwarderSettings.from_properties(properties)


def test_stream_property_renames_the_outgoing_stream_with_default_version() -> None:
    settings = ForwarderSettings.from_properties({**PROPERTIES, "stream": "DeliveredEventStream"})
    assert Wso2EventForwarder(settings, OUT).stream_id == "DeliveredEventStream:1.0.0"
    assert (
        Wso2EventForwarder(ForwarderSettings.from_properties(PROPERTIES), OUT).stream_id
        == "deliveredOrders:1.0.0"
    )


def test_publishing_before_start_is_refused() -> None:
    forwarder = Wso2EventForwarder(ForwarderSettings.from_properties(PROPERTIES), OUT)
    with pytest.raises(AdapterError, match="call start"):
        forwarder.publish([])
