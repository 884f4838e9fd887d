"""WSO2 Data Bridge over Thrift: the node's receiver, a client, and the WSO2Event forwarder.

Wire-compatible with stock WSO2 Gen-1 and Gen-2 clients (the Data Bridge protocol: docs/architecture.md, "Thrift").
Modules, each with one job:

- `databridge.thrift` / `idl`: the IDL, loaded with thriftpy2 into method tables;
- `codec`, `messages`: TBinaryProtocol values and messages (hand-written, bounded);
- `events`, `layout`, `bundle`, `columns`, `bundle_codec`: events ↔ bundles ↔ bytes;
- `definitions`: stream definition JSON, validation and redefinition rules;
- `handler`, `memory`: the node's side of the receiver, and an in-memory double;
- `sessions`, `service`, `settings`, `tls`, `server`: the two listeners;
- `endpoints`, `connection`, `client`: a Gen-1 style publisher;
- `delivery`, `forwarder`: the WSO2Event output adapter;
- `publisher`: a synchronous publisher to receiver groups (`cepheus publish`, the pizza-shop publisher).

Imports only `engine.events`, `engine.errors` and `engine.types` outside this package.
"""

from __future__ import annotations

from adapters.thrift.bundle import decode_bundle, encode_bundle
from adapters.thrift.client import DataBridgeClient
from adapters.thrift.definitions import (
    WireStreamDefinition,
    check_definition,
    parse_definition,
    same_definition,
)
from adapters.thrift.endpoints import Endpoint, ReceiverGroup, ReceiverGroups
from adapters.thrift.errors import (
    AuthenticationFailed,
    DefinitionConflict,
    MalformedDefinition,
    SessionExpired,
    StreamNotFound,
    UndefinedEventType,
    UntrustedCertificate,
)
from adapters.thrift.events import Bundle, Column, WireEvent, WireEvents
from adapters.thrift.forwarder import ForwarderSettings, Wso2EventForwarder
from adapters.thrift.handler import Handler
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.publisher import GroupReport, NotDelivered, Publisher, Report
from adapters.thrift.server import DataBridgeServer
from adapters.thrift.sessions import Sessions
from adapters.thrift.settings import ServerSettings

__all__ = [
    "AuthenticationFailed",
    "Bundle",
    "Column",
    "DataBridgeClient",
    "DataBridgeServer",
    "DefinitionConflict",
    "Endpoint",
    "ForwarderSettings",
    "GroupReport",
    "Handler",
    "InMemoryHandler",
    "MalformedDefinition",
    "NotDelivered",
    "Publisher",
    "ReceiverGroup",
    "ReceiverGroups",
    "Report",
    "ServerSettings",
    "SessionExpired",
    "Sessions",
    "StreamNotFound",
    "UndefinedEventType",
    "UntrustedCertificate",
    "WireEvent",
    "WireEvents",
    "WireStreamDefinition",
    "Wso2EventForwarder",
    "check_definition",
    "decode_bundle",
    "encode_bundle",
    "parse_definition",
    "same_definition",
]
