"""The cluster's keys in a real CHP server: claims, membership and the controller key."""

import trio

from gateway.chp.chp_client import open_chp_client
from gateway.cluster.claims import ServerClaims
from gateway.cluster.membership import CONTROLLER, Membership
from gateway.settings.listeners import Listener
from tests.chp.test_chp_client_server import endpoint, next_change


async def test_a_claim_wins_only_at_the_sequence_it_expects(chp_server, client_options):
    async with open_chp_client([endpoint(chp_server)], **client_options) as client:
        claims = ServerClaims(client)
        assert claims.sequence("k") == 0
        assert await claims.claim("k", b"first", 0)
        assert client.get("k") == b"first"
        stale = claims.sequence("k") - 1
        assert not await claims.claim("k", b"stale", stale)
        assert await claims.claim("k", b"second", claims.sequence("k"))
        assert client.get("k") == b"second"


async def test_of_two_racing_claims_both_sides_agree_on_one_winner(chp_server, client_options):
    servers = [endpoint(chp_server)]
    async with open_chp_client(servers, **client_options) as one, open_chp_client(servers, **client_options) as two:
        results = {}

        async def claim(name, client):
            results[name] = await ServerClaims(client).claim("race", name.encode(), 0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(claim, "one", one)
            nursery.start_soon(claim, "two", two)
        assert sorted(results.values()) == [False, True]


async def test_the_controller_key_passes_on_when_the_controller_stops_refreshing(chp_server, client_options):
    servers = [endpoint(chp_server)]
    listeners = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    async with open_chp_client(servers, "cluster/", **client_options) as first, \
            open_chp_client(servers, "cluster/", **client_options) as second:
        controller = Membership(first, ServerClaims(first), 1, "r1", ttl_s=3)
        other = Membership(second, ServerClaims(second), 2, None, ttl_s=3)
        await controller.join(listeners)
        await other.join(listeners)
        assert (controller.is_controller, other.is_controller) == (True, False)
        async with trio.open_nursery() as refreshing:
            refreshing.start_soon(controller.refresh)
            refreshing.start_soon(other.refresh)
            with second.watch() as changes:
                while set(other.members()) != {1, 2}:
                    await next_change(changes, lambda change: True)
            assert other.members()[1].rack == "r1"
            assert other.members()[2].listeners == {"PLAINTEXT": ("127.0.0.1", 9092)}
            assert other.controller_id == 1
            refreshing.cancel_scope.cancel()
        with trio.fail_after(30):  # nobody refreshes the controller's keys now: they expire
            await other.claim_controller_when_free()
        assert other.is_controller and other.controller_id == 2
        assert second.get(CONTROLLER) is not None
