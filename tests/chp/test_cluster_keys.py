"""The cluster's keys in a real CHP server: claims, membership and the controller key."""

import math

import trio
from structlog.testing import capture_logs

from gateway.chp.chp_client import open_chp_client
from gateway.cluster.claims import ServerClaims
from gateway.cluster.leadership import TOPICS, Leaders, assign_leaders
from gateway.cluster.membership import CONTROLLER, ELIGIBILITY_CHECK_S, MEMBERS, Membership, encoded
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


async def test_a_restarted_controller_takes_its_own_key_back_at_once(chp_server, client_options):
    """The key its earlier run left names its node id: that run is gone, so the key is not waited out."""
    servers = [endpoint(chp_server)]
    listeners = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    async with open_chp_client(servers, "cluster/", **client_options) as before:
        first_run = Membership(before, ServerClaims(before), 1, None, ttl_s=60)
        await first_run.join(listeners)
        assert first_run.is_controller
    async with open_chp_client(servers, "cluster/", **client_options) as after, \
            open_chp_client(servers, "cluster/", **client_options) as other_client:
        other = Membership(other_client, ServerClaims(other_client), 2, None, ttl_s=60)
        await other.join(listeners)
        assert not other.is_controller  # node 1's key is alive for another gateway
        second_run = Membership(after, ServerClaims(after), 1, None, ttl_s=60)
        with trio.fail_after(10):  # well within the key's 60 s ttl
            await second_run.join(listeners)
        assert second_run.is_controller and second_run.controller_id == 1


class LateClaims(ServerClaims):
    """Claims whose first the server applies, but whose outcome the claimer counts as lost (timed out)."""

    late = True

    async def claim(self, key: str, value: bytes, expected_sequence: int, ttl: float | None = None) -> bool:
        if not self.late:
            return await super().claim(key, value, expected_sequence, ttl)
        self.late = False
        await self.client.set(key, value, ttl)
        await until(self.client, lambda: self.client.get(key) == value)
        return False


async def test_a_controller_key_claim_applied_after_its_timeout_is_taken_up_at_once(chp_server, client_options):
    """A claim sent while the CHP pair fails over may be applied after the claimer stopped
    waiting: the key then names this gateway, which takes it up rather than leave the
    cluster without a controller until the key expires."""
    servers = [endpoint(chp_server)]
    listeners = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    async with open_chp_client(servers, "cluster/", **client_options) as first, \
            open_chp_client(servers, "cluster/", **client_options) as second:
        gone = Membership(first, ServerClaims(first), 1, None, ttl_s=1)  # never refreshed: its key expires
        late = Membership(second, LateClaims(second), 2, None, ttl_s=60)
        await gone.join(listeners)
        await late.join(listeners)
        with trio.fail_after(10):  # well within the late claim's 60 s ttl
            await late.claim_controller_when_free()
        assert late.is_controller and late.controller_id == 2


class SlowClaims(ServerClaims):
    """Claims whose outcome the claimer learns `delay` seconds after the server decided them
    (math.inf: never), as while the CHP pair fails over."""

    delay = 0.0

    async def claim(self, key: str, value: bytes, expected_sequence: int, ttl: float | None = None) -> bool:
        won = await super().claim(key, value, expected_sequence, ttl)
        await trio.sleep(self.delay)
        return won


async def test_the_membership_is_refreshed_while_a_renewal_of_the_controller_key_waits(chp_server, client_options):
    listeners = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    async with open_chp_client([endpoint(chp_server)], "cluster/", **client_options) as client, \
            trio.open_nursery() as nursery:
        claims = SlowClaims(client)
        controller = Membership(client, claims, 1, None, ttl_s=1.5)
        await controller.join(listeners)
        assert controller.is_controller
        claims.delay = math.inf
        nursery.start_soon(controller.refresh)
        member = f"{MEMBERS}1"
        for _ in range(3):  # each a ttl/3 apart, the controller key's renewal waiting from the first on
            refreshed = client.sequence(member)
            await until(client, lambda refreshed=refreshed: client.sequence(member) > refreshed)
        nursery.cancel_scope.cancel()


async def test_the_controller_key_outlives_renewals_whose_outcome_shows_late(chp_server, client_options):
    """Each renewal's outcome shows past the next one's due time (as across a CHP fail-over), but
    within the ttl the server counts from the renewal: the next renewal goes out at once."""
    listeners = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    async with open_chp_client([endpoint(chp_server)], "cluster/", **client_options) as client, \
            trio.open_nursery() as nursery:
        claims = SlowClaims(client)
        controller = Membership(client, claims, 1, None, ttl_s=4)
        await controller.join(listeners)
        claims.delay = 3  # past ttl/3, a second before the key would expire
        with client.watch() as changes, trio.fail_after(30):
            nursery.start_soon(controller.refresh)
            for _ in range(3):
                change = await next_change(changes, lambda change: getattr(change, "key", None) == CONTROLLER)
                assert change.value is not None, "the controller key expired"
        nursery.cancel_scope.cancel()


async def test_a_renewal_lost_to_the_controllers_own_earlier_one_is_made_again(chp_server, client_options):
    """Across a CHP fail-over a renewal can lose to the one before it, applied by the backup when
    it took over with a ttl counted from its sending: the controller renews again at once."""
    listeners = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    async with open_chp_client([endpoint(chp_server)], "cluster/", **client_options) as client:
        claims = LateClaims(client)
        claims.late = False
        controller = Membership(client, claims, 1, None, ttl_s=60)
        await controller.join(listeners)
        claims.late = True
        with client.watch() as changes, trio.fail_after(10):
            await controller._refresh_controller()  # the late renewal, then one at its sequence
            renewals = [await next_change(changes, lambda change: getattr(change, "key", None) == CONTROLLER)
                        for _ in range(2)]
        assert [renewal.value for renewal in renewals] == [encoded({"node": 1})] * 2


async def until(client, condition, timeout: float = 15) -> None:
    """Until `condition()` holds, looked at again after every change `client` sees."""
    with trio.fail_after(timeout), client.watch() as changes:
        while not condition():
            await next_change(changes, lambda change: True)


async def test_a_controller_whose_key_another_won_steps_down_once(chp_server, client_options):
    """Paused past its ttl (here: not refreshing), the controller finds the key another's when it
    runs again: it steps down once, logged once, and never renews or claims the other's key."""
    servers = [endpoint(chp_server)]
    listeners = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    async with open_chp_client(servers, "cluster/", **client_options) as first, \
            open_chp_client(servers, "cluster/", **client_options) as second:
        controller = Membership(first, ServerClaims(first), 1, None, ttl_s=1)
        other = Membership(second, ServerClaims(second), 2, None, ttl_s=1)
        await controller.join(listeners)
        await other.join(listeners)
        with trio.fail_after(30):
            await other.claim_controller_when_free()
        with capture_logs() as logs, trio.fail_after(10):
            async with trio.open_nursery() as running:
                running.start_soon(controller.refresh)
                running.start_soon(other.refresh)
                await controller.hold_controller()
                assert not controller.is_controller
                await trio.sleep(3 * controller.ttl_s)  # refreshes with the key another's, to see none renews it
                running.cancel_scope.cancel()
        assert [entry["event"] for entry in logs if entry["log_level"] in ("warning", "error")] == [
            "controller_key_lost"]
        assert (controller.controller_id, other.is_controller) == (2, True)


async def test_leadership_goes_to_eligible_gateways_and_leaves_one_no_longer_eligible(chp_server, client_options):
    """A gateway that cannot lead (it reaches too few stores) is given no partition, and those it
    led move to another at a newer epoch; once none is eligible nothing moves (none could lead better)."""
    servers = [endpoint(chp_server)]
    listeners = (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    can_lead = {1: True, 2: True, 3: False}
    async with open_chp_client(servers, "cluster/", **client_options) as client, trio.open_nursery() as nursery:
        members = [Membership(client, ServerClaims(client), node, None, ttl_s=3, can_lead=lambda n=node: can_lead[n])
                   for node in can_lead]
        for member in members:
            await member.join(listeners)
            nursery.start_soon(member.refresh)
        await client.set(f"{TOPICS}t", encoded({"name": "t", "id": "tid", "partitions": [{}] * 4}))
        nursery.start_soon(assign_leaders, client, ServerClaims(client), members[0], Leaders(client))
        leaders = Leaders(client)

        def led() -> dict[int, tuple[int, int]]:
            return {index: leaders.leader("tid", index) for index in range(4)}

        await until(client, lambda: None not in led().values() and {leader for leader, _ in led().values()} == {1, 2})
        before = led()
        can_lead[2] = False
        await until(client, lambda: all(led()[i] == (1, before[i][1] + 1) for i in before if before[i][0] == 2))
        assert all(led()[i] == before[i] for i in before if before[i][0] == 1)
        can_lead[1] = False
        with trio.move_on_after(2 * ELIGIBILITY_CHECK_S + 1):
            await until(client, lambda: any(leader != 1 for leader, _ in led().values()))
        assert {leader for leader, _ in led().values()} == {1}
        nursery.cancel_scope.cancel()
