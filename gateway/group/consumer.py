"""KIP-848 consumer groups (placeholder until the protocol lands)."""


class ConsumerGroup:
    @classmethod
    def restored(cls, entry):
        raise NotImplementedError


class ConsumerGroups:
    def __init__(self, coordinator):
        self.coordinator = coordinator
        self.topics = None

    def restored(self, group):
        pass
