"""`python -m gateway`: the same as `dafka-gateway`."""

from gateway.cli import main

main()
