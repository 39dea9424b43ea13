"""`python -m gateway`: the same as `dafka-gateway`."""

from .cli import main

main()
