"""The container's health check: the node's own /ready, on the port DAFKA_HTTP_PORT names.

Exit status 0 when it answers 200, 1 otherwise, with the reason on stderr for
`docker inspect`. Standard library only, and no import of the project: it
runs every few seconds.
"""

import os
import sys
import urllib.error
import urllib.request

TIMEOUT_S = 4.0


def main() -> int:
    port = os.environ.get("DAFKA_HTTP_PORT")
    if not port:
        sys.stderr.write("unhealthy: DAFKA_HTTP_PORT names no HTTP endpoint to ask\n")
        return 1
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=TIMEOUT_S):
            return 0
    except urllib.error.HTTPError as error:
        sys.stderr.write(f"unhealthy: /ready answered {error.code} {error.read().decode(errors='replace')}")
    except OSError as error:
        sys.stderr.write(f"unhealthy: {error}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
