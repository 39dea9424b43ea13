"""A real broker for tests: the gateway with its embedded mesh as a child process on free
ports, and the pytest plugin that gives an application's tests one (`kafka_bootstrap`)."""
