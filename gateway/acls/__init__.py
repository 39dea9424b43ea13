"""ACLs with Kafka's semantics: the bindings, the authorizer's decisions, their journal."""
