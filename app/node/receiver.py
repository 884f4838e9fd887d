"""`RegistryHandler`: the Data Bridge receiver's `Handler`, backed by the registry and the plans.

Logins are checked against the registry's users (cached and throttled: `app.auth`); stream definitions live in the registry
(through the catalog), so a stream a client defines on one node is known on all of them;
published bundles go to the ingress, which runs them through every plan importing the
stream before the reply is sent.
"""

from __future__ import annotations

from adapters.senders import IdentityError
from adapters.thrift import WireEvent, WireStreamDefinition
from adapters.thrift.errors import AuthenticationFailed, UndefinedEventType
from app.auth import Credentials
from app.node.catalog import StreamCatalog
from app.node.ingress import Ingress


class RegistryHandler:
    def __init__(self, catalog: StreamCatalog, ingress: Ingress, credentials: Credentials) -> None:
        self._catalog = catalog
        self._ingress = ingress
        self._credentials = credentials

    def authenticate(self, username: str, password: str, address: str) -> None:
        verdict = self._credentials.check(username, password, address, "thrift")
        if not verdict.ok:
            raise AuthenticationFailed(verdict.message)

    def define_stream(self, definition: WireStreamDefinition) -> str:
        return self._catalog.define(definition)

    def find_stream_id(self, name: str, version: str) -> str | None:
        stream_id = f"{name}:{version}"
        return stream_id if self._catalog.get(stream_id) is not None else None

    def delete_stream(self, stream_id: str) -> bool:
        return self._catalog.delete(stream_id)

    def definition(self, stream_id: str) -> WireStreamDefinition | None:
        return self._catalog.wire(stream_id)

    def publish(self, events: list[WireEvent]) -> None:
        # the bundle was decoded with `definition`: every stream id in it is known
        try:
            self._ingress.publish_wire(events)
        except IdentityError as exc:  # a sender's bug no resend mends
            msg = f"bundle refused: {exc}"
            raise UndefinedEventType(msg) from None
