"""Health, readiness and Prometheus metrics over HTTP."""
