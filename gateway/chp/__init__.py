"""CHP over zmq: the server that owns the cluster hashmap and the trio client.

Run a server with `chp-server --chp-port P`; `ChpServer` is
not re-exported here so that running that module does not import it twice.
"""

from gateway.chp.changes import Change, Endpoint, ServerLost, Synced, Update
from gateway.chp.chp_client import ChpClient, open_chp_client

__all__ = [
    "Change",
    "ChpClient",
    "Endpoint",
    "ServerLost",
    "Synced",
    "Update",
    "open_chp_client",
]
