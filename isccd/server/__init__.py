"""The daemon's Unix-socket server: connections, the event broker, and the socket file.

- :mod:`~isccd.server.backend`: what the server needs from the daemon (:class:`Backend`);
- :mod:`~isccd.server.broker`: fans committed events out to bounded subscriber queues;
- :mod:`~isccd.server.connection`: one client: requests in order, its subscription's stream;
- :mod:`~isccd.server.handlers`: the commands that ask the daemon something;
- :mod:`~isccd.server.paths`: resolving a client's path without leaving the roots;
- :mod:`~isccd.server.listener`: creating the socket safely; peer credentials;
- :mod:`~isccd.server.options`: the ``[server]`` settings (:class:`ServerOptions`);
- :mod:`~isccd.server.server`: start, serve, bounded shutdown.

The wire format is :mod:`isccd.protocol`. Imports only protocol, model and errors of isccd.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isccd.submodules import on_first_use

if TYPE_CHECKING:
    from isccd.server.backend import Backend, LogBounds
    from isccd.server.broker import Broker, BrokerStatistics, Subscription, SubscriptionStatistics
    from isccd.server.connection import ConnectionStatistics
    from isccd.server.listener import PeerCredentials, open_socket, peer_credentials
    from isccd.server.options import ServerOptions
    from isccd.server.paths import resolve_in_roots
    from isccd.server.server import Server, ServerStatistics

#: Where each public name lives. Submodules are imported on first use of one of their names
#: (PEP 562): the settings name :class:`ServerOptions`, and a command that reads them (``isccd
#: scan``) then loads neither the server nor the broker nor structlog through them. A test
#: keeps this map, the imports above and ``__all__`` equal.
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "backend": ("Backend", "LogBounds"),
    "broker": ("Broker", "BrokerStatistics", "Subscription", "SubscriptionStatistics"),
    "connection": ("ConnectionStatistics",),
    "listener": ("PeerCredentials", "open_socket", "peer_credentials"),
    "options": ("ServerOptions",),
    "paths": ("resolve_in_roots",),
    "server": ("Server", "ServerStatistics"),
}
__getattr__, __dir__ = on_first_use(__name__, _SUBMODULES, globals())

__all__ = [
    "Backend",
    "Broker",
    "BrokerStatistics",
    "ConnectionStatistics",
    "LogBounds",
    "PeerCredentials",
    "Server",
    "ServerOptions",
    "ServerStatistics",
    "Subscription",
    "SubscriptionStatistics",
    "open_socket",
    "peer_credentials",
    "resolve_in_roots",
]
