"""The Binary Star state machine of a CHP server pair (no I/O; times in seconds).

Each server hears its peer's state every heartbeat. A server becomes
active only when its peer says it may (a booting backup, or a restarting
peer while this one followed it), or when a client asks it to serve AND
the peer has been silent for `timeout`: a server that merely lost sight
of its peer does not take over until a client can no longer reach the
peer either, which keeps both from being active in most splits.
"""

import structlog

from protocol.chp.peer import State

log = structlog.get_logger()


class BinaryStar:
    def __init__(self, primary: bool, timeout: float, now: float):
        self.primary = primary
        self.state = State.PRIMARY if primary else State.BACKUP
        self.timeout = timeout
        # How many times a server of the pair became active, as far as this one knows.
        self.term = 0
        # At start the peer gets a full timeout to speak up before a client may
        # make a fresh primary active (it could be restarting beside an active backup).
        self.peer_expiry = now + timeout

    @property
    def active(self) -> bool:
        return self.state is State.ACTIVE

    def peer_alive(self, now: float) -> bool:
        return now < self.peer_expiry

    def on_peer(self, peer: State, now: float, term: int = 0) -> None:
        """The peer's heartbeat said `peer`, and the latest `term` it knows."""
        self.peer_expiry = now + self.timeout
        lead, self.term = term - self.term, max(self.term, term)
        self._become(self._after_peer(peer, lead))

    def on_client_request(self, now: float) -> bool:
        """A client asks this server to serve; whether it may."""
        if self.state in (State.PRIMARY, State.PASSIVE) and not self.peer_alive(now):
            self._become(State.ACTIVE)
        return self.active

    def _after_peer(self, peer: State, lead: int) -> State:
        match self.state, peer:
            case (State.PRIMARY, State.BACKUP) | (State.PASSIVE, State.PRIMARY | State.BACKUP):
                return State.ACTIVE  # the peer is (re)starting without state
            case (State.PRIMARY | State.BACKUP, State.ACTIVE):
                return State.PASSIVE
            case (State.ACTIVE, State.ACTIVE) if lead > 0 or (lead == 0 and not self.primary):
                # Both active after a split or a pause: the one that took over
                # last goes on (a paused one did not); at a tie, the primary.
                return State.PASSIVE
            case (State.PASSIVE, State.PASSIVE) if self.primary:
                return State.ACTIVE
        return self.state

    def _become(self, state: State) -> None:
        if state is not self.state:
            self.term += state is State.ACTIVE
            log.info("chp.binary_star", old=self.state.value, new=state.value, term=self.term)
            self.state = state
