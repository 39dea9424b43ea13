"""Request handlers, one module per Kafka API family.

Importing `gateway.api.handlers` loads every handler module, each of which
registers its APIs with `registry.handles`.
"""
