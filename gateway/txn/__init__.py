"""The transaction coordinator (KIP-98): transactional ids, their epochs and transactions."""
