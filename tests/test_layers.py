"""The layers of the code and the directions they may import in, as ARCHITECTURE.md draws them.

Every import of every module counts, also those inside functions and
TYPE_CHECKING blocks: a layer may import only itself and the layers listed
for it, so there is no cycle between layers, and the Dafka mesh never
imports the Kafka side.
"""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BASE = ("gateway.kafka_error", "gateway.zmq_trio", "gateway._zmq_receive", "gateway.zmq_curve", "gateway.directory_lock", "gateway.data_directory",
        "gateway.logging_setup", "gateway.lifecycle",
        "gateway.collector", "gateway.allocator", "gateway.observability", "gateway.wall_clock")
LAYERS = {  # layer: the module prefixes it holds
    "protocol": ("protocol",),
    "settings": ("gateway.settings",),
    "base": BASE,
    "mesh": ("gateway.mesh",),
    "chp": ("gateway.chp",),
    "storage": ("gateway.storage",),
    "partitions": ("gateway.partitions",),
    "cluster": ("gateway.cluster",),
    "topics": ("gateway.topics",),
    "configs": ("gateway.configs",),
    "group": ("gateway.group",),
    "txn": ("gateway.txn",),
    "quotas": ("gateway.quotas",),
    "acls": ("gateway.acls",),
    "features": ("gateway.features",),
    "server": ("gateway.server",),
    "security": ("gateway.security",),
    "api": ("gateway.api",),
    "testing": ("gateway.testing",),
    "assembly": ("gateway.app", "gateway.broker", "gateway.carry_over", "gateway.state_metrics", "gateway.embedded_mesh", "gateway.cli",
                 "gateway.cluster_member", "gateway.__main__", "gateway"),
}
FOUNDATION = {"protocol", "settings", "base"}
MAY_IMPORT = {
    "protocol": set(),
    "settings": set(),
    "base": {"settings", "protocol"},
    "mesh": FOUNDATION,
    "chp": FOUNDATION,
    "storage": FOUNDATION | {"mesh"},
    "partitions": FOUNDATION,
    "cluster": FOUNDATION | {"chp"},
    "topics": FOUNDATION | {"storage", "partitions"},
    "configs": FOUNDATION | {"storage", "cluster", "topics", "server"},
    "group": FOUNDATION | {"storage"},
    "txn": FOUNDATION | {"storage"},
    "quotas": FOUNDATION | {"storage"},
    "acls": FOUNDATION | {"storage"},
    "features": FOUNDATION | {"storage"},
    "server": FOUNDATION,
    "security": FOUNDATION | {"storage", "server"},
    "api": FOUNDATION | {"server", "security", "cluster", "configs", "topics", "partitions", "group", "txn", "quotas", "acls",
            "features"},
    "testing": FOUNDATION,
    "assembly": set(LAYERS),
}


def layer_of(module: str) -> str:
    matches = [(len(prefix), layer) for layer, prefixes in LAYERS.items() for prefix in prefixes
               if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module} belongs to no layer: add it to LAYERS and ARCHITECTURE.md"
    return max(matches)[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Every project module imported, by importing module."""
    found = defaultdict(set)
    for path in [*ROOT.glob("gateway/**/*.py"), *ROOT.glob("protocol/**/*.py")]:
        module = module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                assert not isinstance(node, ast.ImportFrom), f"{module}: relative import"
                continue
            found[module] |= {name for name in names if name.split(".")[0] in ("gateway", "protocol")}
    return found


def test_each_layer_imports_only_the_layers_below_it():
    wrong = sorted(f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
                   for module, targets in imports().items() for target in targets
                   if layer_of(target) != layer_of(module) and layer_of(target) not in MAY_IMPORT[layer_of(module)])
    assert not wrong, "\n".join(wrong)


def test_the_allowed_directions_have_no_cycle():
    seen, done = set(), set()

    def visit(layer, path):
        assert layer not in seen - done, f"cycle: {' -> '.join(path)}"
        if layer in done:
            return
        seen.add(layer)
        for lower in MAY_IMPORT[layer] - {layer}:
            if layer != "assembly":
                visit(lower, [*path, lower])
        done.add(layer)

    for layer in LAYERS:
        visit(layer, [layer])


def test_module_names_say_which_module_they_are():
    """No two modules share a name, but API schemas named after their Kafka API."""
    names = defaultdict(list)
    for path in [*ROOT.glob("gateway/**/*.py"), *ROOT.glob("protocol/**/*.py")]:
        if path.name not in ("__init__.py", "__main__.py") and "apis" not in path.parts:
            names[path.name].append(str(path.relative_to(ROOT)))
    assert not {name: paths for name, paths in names.items() if len(paths) > 1}
