"""What the cluster's tasks do with what CHP holds: a failure of one partition or of one
request is retried or refused alone, never the end of the task (which would end the gateway)."""

import itertools
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
import trio

from gateway.chp.changes import Update
from gateway.cluster.asking import serve_requests
from gateway.cluster.leadership import TOPIC_REQUESTS, follow_cluster, on_changes, serve_topic_requests
from gateway.cluster.membership import decoded, encoded
from gateway.kafka_error import KafkaError
from gateway.settings.table import BrokerSettings
from gateway.topics.topic_registry import TopicRegistry
from protocol.kafka.error_codes import ErrorCode


class Mirror:
    """A CHP client's mirror that never changes: its keys, the deletions asked for."""

    def __init__(self, keys: dict[str, bytes] | None = None):
        self.keys = dict(keys or {})
        self.deleted: list[str] = []
        self._changes = trio.open_memory_channel(0)

    def keys_under(self, prefix: str) -> list[str]:
        return [key for key in self.keys if key.startswith(prefix)]

    @contextmanager
    def watch(self):
        yield self._changes[1]

    async def delete(self, key: str) -> None:
        self.deleted.append(key)
        self.keys.pop(key, None)

    def get(self, key: str) -> bytes | None:
        return self.keys.get(key)

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        self.keys[key] = value


async def test_a_reaction_that_returns_seconds_is_called_again_after_them_without_a_change(autojump_clock):
    calls = []

    async def react():
        calls.append(trio.current_time())
        return 1.5 if calls[-1] - calls[0] < 3 else None  # a failure to retry, until 3 s passed

    async with trio.open_nursery() as nursery:
        nursery.start_soon(on_changes, Mirror(), react, ("cluster/",))
        await trio.sleep(100)
        nursery.cancel_scope.cancel()
    # at once (again as the watch opens: a change may have come before it), then after each wait
    assert sorted({call - calls[0] for call in calls}) == [0, 1.5, 3.0]


async def test_reactions_to_a_stream_of_changes_rest_as_long_as_they_took(autojump_clock):
    """Each reaction reads the whole mirror: as changes stream in, the next one waits for
    as long as the last took, and takes the changes of that time together."""
    mirror, starts = Mirror(), []

    async def react():
        starts.append(trio.current_time())
        await trio.sleep(0.1)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(on_changes, mirror, react, ("cluster/",))
        for sequence in range(300):  # one every 10 ms for 3 s
            await mirror._changes[0].send(Update(f"cluster/partitions/t/{sequence}", b"{}", sequence))
            await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert len(starts) > 10 and min(gaps) >= 0.2 - 1e-9


class Topics:
    """The controller's registry: a name it refuses, the others created."""

    def __init__(self):
        self.created = []

    async def auto_create(self, name: str):
        if " " in name:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name {name!r} is illegal")
        self.created.append(name)


async def test_a_topic_request_the_controller_refuses_is_dropped_and_the_others_served(autojump_clock):
    """A request left by an older gateway (or one the controller lost control for) is refused
    alone: the task that serves topic requests goes on."""
    mirror = Mirror({f"{TOPIC_REQUESTS}bad name": b"{}", f"{TOPIC_REQUESTS}orders": b"{}"})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_topic_requests, mirror, topics := Topics())
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert topics.created == ["orders"]
    assert sorted(mirror.deleted) == [f"{TOPIC_REQUESTS}bad name", f"{TOPIC_REQUESTS}orders"]


async def test_a_request_whose_handler_fails_is_answered_unknown_server_error_and_the_others_served(
        autojump_clock):
    """Another gateway's request that the handler cannot take (a bug, a malformed request: a
    remote marker's did so) is answered as Kafka answers an unexpected exception; the task goes on."""
    mirror = Mirror({"asks/1": encoded({"hex": "zz"}), "asks/2": encoded({"hex": "00ff"})})

    async def answer(request: dict) -> dict:
        return {"error": 0, "bytes": len(bytes.fromhex(request["hex"]))}

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_requests, mirror, "asks/", "answers/", answer)
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert decoded(mirror.get("answers/1"))["error"] == ErrorCode.UNKNOWN_SERVER_ERROR
    assert decoded(mirror.get("answers/2")) == {"error": 0, "bytes": 2}
    assert sorted(mirror.deleted) == ["asks/1", "asks/2"]


async def test_a_follower_refuses_an_illegal_name_itself_instead_of_asking_the_controller():
    requested = []
    sharing = SimpleNamespace(is_controller=False, request_creation=lambda name: requested.append(name))
    registry = TopicRegistry(BrokerSettings(auto_create_topics_enable=True), SimpleNamespace(read=None, watcher=None),
                             None, None, sharing)
    with pytest.raises(KafkaError) as refused:
        await registry.auto_create("bad name")
    assert refused.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert requested == []


class Broadcast:
    """A CHP client's mirror whose every watch sees every change sent."""

    def __init__(self):
        self._watchers: list[trio.MemorySendChannel] = []

    @contextmanager
    def watch(self):
        send, receive = trio.open_memory_channel(100)
        self._watchers.append(send)
        try:
            yield receive
        finally:
            self._watchers.remove(send)

    def change(self, key: str) -> None:
        for watcher in self._watchers:
            watcher.send_nowait(Update(key, b"{}", 1))


async def test_a_new_topic_is_taken_while_takeovers_hold_the_leadership_reaction(autojump_clock):
    """A follower's leadership reaction holds on through its takeovers (fences, logs read back:
    seconds); the controller's new topics are taken meanwhile, as a Kafka broker applies them
    from the metadata log at once."""
    mirror, taken, takeovers_done = Broadcast(), [], trio.Event()

    class Topics:
        async def follow_shared(self, states):
            pass

        async def lead(self, wanted):
            await takeovers_done.wait()

        async def follow_new_shared(self, states):
            taken.append(trio.current_time())

        async def close_retired(self):
            pass

        def deleted_elsewhere(self, notices):
            pass

    leaders = SimpleNamespace(shared_topics=dict, led_by=lambda node_id: {}, deletion_notices=dict)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(follow_cluster, mirror, leaders, Topics(), 2)
        await trio.sleep(1)  # the first reactions ran; the takeovers hold on
        taken.clear()
        mirror.change("cluster/topics/fresh")
        await trio.sleep(0.01)
        assert taken and not takeovers_done.is_set()
        takeovers_done.set()
        nursery.cancel_scope.cancel()
