"""The Dafka mesh in trio: tower, producer, consumer and store nodes over pyzmq."""
