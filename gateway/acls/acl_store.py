"""The ACLs of the cluster, durable in the gateway's `acls` journal, and the authorizer over them.

Each change is journaled as one binding added or removed, so replay applies
them in order; a compaction writes the bindings there are. In a cluster of
gateways (`sharing`) the controller alone journals them and shares the
bindings after every change; every other gateway authorizes against its
mirror of them and forwards the changes it is sent to the controller. Without an
authorizer (`authorizer.class.name` empty) nothing is refused and the ACL
APIs answer SECURITY_DISABLED, as Kafka's do.
"""

from __future__ import annotations

import structlog
import trio

from gateway.acls.authorizer import AclSet, Policy, Who, authorize, authorize_any
from gateway.acls.model import AclBinding, AclFilter, Operation, ResourceType
from gateway.settings.table import BrokerSettings
from gateway.storage.journal import Journal
from gateway.storage.journal_sharing import JournaledState, JournalSharing

log = structlog.get_logger()
ENTRY = "acl"


def policy_of(settings: BrokerSettings) -> Policy:
    super_users = frozenset(user.strip() for user in settings.super_users.split(";") if user.strip())
    return Policy(super_users, settings.allow_everyone_if_no_acl_found)


class Acls(JournaledState):
    ENTRY = ENTRY

    def __init__(self, journal: Journal, settings: BrokerSettings, sharing: JournalSharing | None = None):
        super().__init__(journal, sharing)
        self.enabled = bool(settings.authorizer_class_name)
        self.policy = policy_of(settings)
        self.bindings = AclSet()  # what decisions see: a change's bindings all at once
        # What the journal holds, each binding as soon as its entry is acknowledged: a compaction
        # between two entries of one change snapshots these, or it would drop the first ones.
        self._journaled: set[AclBinding] = set()
        self._lock = trio.Lock()

    def _apply(self, entry: dict) -> None:
        binding = AclBinding.from_list(entry["binding"])
        _put(self._journaled, binding, entry["present"])
        _put(self.bindings, binding, entry["present"])

    def _snapshot(self) -> list[dict]:
        return [_entry(b, True) for b in sorted(self._journaled)]

    def _clear(self) -> None:
        self.bindings, self._journaled = AclSet(), set()

    def authorize(self, who: Who, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        if not self.enabled or authorize(self.bindings, self.policy, who, operation, resource_type, name):
            return True
        log.debug("authorization_denied", principal=who.principal, host=who.host, operation=operation.name,
                  resource_type=resource_type.name, resource=name)
        return False

    def authorize_any(self, who: Who, operation: Operation, resource_type: ResourceType) -> bool:
        return not self.enabled or authorize_any(self.bindings, self.policy, who, operation, resource_type)

    def describe(self, selected: AclFilter) -> list[AclBinding]:
        return sorted(b for b in self.bindings if selected.matches(b))

    async def create(self, bindings: list[AclBinding]) -> None:
        """Add bindings once journaled (those already there: nothing to do, as in Kafka)."""
        if self.follows:
            await self.forwarded({"create": [b.as_list() for b in bindings]})
            return
        async with self._lock:
            await self._change(sorted(set(bindings) - set(self.bindings)), present=True)

    async def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """The bindings each filter matched, all of them removed once journaled."""
        if self.follows:
            result = await self.forwarded({"delete": [selected.as_list() for selected in filters]})
            return [[AclBinding.from_list(b) for b in found] for found in result["matched"]]
        async with self._lock:
            matched = [self.describe(selected) for selected in filters]
            await self._change(sorted({b for found in matched for b in found}), present=False)
            return matched

    async def _change(self, bindings: list[AclBinding], present: bool) -> None:
        """Journal every binding's change, then apply them together and share them: as Kafka applies one
        request's ACL records as one batch, no decision sees half of them (DENY WRITE without the ALLOW
        DESCRIBE beside it would hide the topic)."""
        for binding in bindings:
            await self.journal.write(_entry(binding, present))
            _put(self._journaled, binding, present)
        for binding in bindings:
            _put(self.bindings, binding, present)
            log.info("acl_created" if present else "acl_deleted", binding=binding.as_list())
        if bindings:
            await self._share()

    async def apply_forwarded(self, change: dict) -> dict:
        """The controller: a change another gateway of the cluster was sent."""
        if "create" in change:
            await self.create([AclBinding.from_list(b) for b in change["create"]])
            return {}
        matched = await self.delete([AclFilter.from_list(selected) for selected in change["delete"]])
        return {"matched": [[b.as_list() for b in found] for found in matched]}


def _entry(binding: AclBinding, present: bool) -> dict:
    return {"type": ENTRY, "binding": binding.as_list(), "present": present}


def _put(bindings: AclSet | set[AclBinding], binding: AclBinding, present: bool) -> None:
    """Add `binding` to `bindings`, or remove it."""
    if present:
        bindings.add(binding)
    else:
        bindings.discard(binding)
