"""The daemon's Unix-socket server: connections, the event broker, and the socket file.

- :mod:`~isccd.server.backend`: what the server needs from the daemon (:class:`Backend`);
- :mod:`~isccd.server.broker`: fans committed events out to bounded subscriber queues;
- :mod:`~isccd.server.connection`: one client: requests in order, its subscription's stream;
- :mod:`~isccd.server.handlers`: the commands that ask the daemon something;
- :mod:`~isccd.server.paths`: resolving a client's path without leaving the roots;
- :mod:`~isccd.server.listener`: creating the socket safely; peer credentials;
- :mod:`~isccd.server.server`: start, serve, bounded shutdown.

The wire format is :mod:`isccd.protocol`. Imports only protocol, model and errors of isccd.
"""

from __future__ import annotations

from .backend import Backend, LogBounds
from .broker import Broker, BrokerStatistics, Subscription, SubscriptionStatistics
from .connection import ConnectionStatistics
from .listener import PeerCredentials, open_socket, peer_credentials
from .options import ServerOptions
from .paths import resolve_in_roots
from .server import Server, ServerStatistics

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
