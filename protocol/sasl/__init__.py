"""SASL mechanisms as server-side state machines, sans-IO: tokens in, tokens out.

Each mechanism's exchange takes the client's tokens one at a time (`step`),
answers the token to send back, and once `complete` names the authenticated
user. A failed exchange raises `SaslFailure`.
"""
