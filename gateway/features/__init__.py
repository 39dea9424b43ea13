"""Feature flags (KIP-584): the features the gateway supports and the cluster's finalized levels."""
