"""Print the project's dependencies from pyproject.toml, one a line, for `pip install -r`;
with --build, the build backend's requirements too (what an offline wheelhouse must hold).

    python3 docker/requirements.py [--build] [PYPROJECT]
"""

import sys
import tomllib

arguments = sys.argv[1:]
paths = [argument for argument in arguments if argument != "--build"]
with open(paths[0] if paths else "pyproject.toml", "rb") as file:
    project = tomllib.load(file)
requirements = project["project"]["dependencies"]
if "--build" in arguments:
    requirements += project["build-system"]["requires"]
print("\n".join(requirements))
