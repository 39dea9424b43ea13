"""Sans-IO codecs: Kafka requests, responses and records; Dafka and CHP messages.

Nothing here opens a socket or starts a task: callers hand in bytes and get
objects back, or the other way round.
"""
