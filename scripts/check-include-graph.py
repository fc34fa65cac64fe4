#!/usr/bin/env python3
"""check-include-graph.py - the folder graph of the tree's #include "..." lines has no cycle, and
its one-way rules hold (docs/architecture.md, "Folders and their includes").

Scans every .h, .cpp, .cu and .cuh file under comm/, topology/, engine/, plugins/, tools/ and
include/, resolves each `#include "..."` (next to the including file first, then from the tree's
root, then from include/; a name found nowhere, such as a system header written with quotes, is
left out) and maps both files to their folder:

  - a folder is a path's first two parts (comm/base, engine/train, plugins/zero, topology/settings);
    a file directly under a top folder (comm/topology_bridge.h, topology/host.h) belongs to the
    top folder itself (comm, topology). Folders come from the paths, so a folder added or split
    (engine/state, engine/checkpoint) is a node without a change here.
  - under comm/transport each subfolder is a node of its own (comm/transport/ofi,
    comm/transport/ucx, comm/transport/peer_memory), beside comm/transport for the interface and the
    helpers every transport shares. A transport is a directory with one small interface
    (docs/architecture.md): the transports are peers, and a cycle between two of them, or between
    one and the shared interface, is a layering fault that one comm/transport node would hide.

It fails, naming each cycle with one #include that makes each of its edges, when the graph of
folders (edges between different folders only) has a cycle, and names each include that breaks
a rule in RULES. Exit status: 0 clean, 1 a cycle or a broken rule, 2 bad usage.

  check-include-graph.py [--root DIR]   check the tree at DIR (default: this script's tree)
  check-include-graph.py --self-test    plant cycles and broken rules in a temporary tree and
                                        check that each is reported, and a clean one passes
  check-include-graph.py --print        print the folder graph (folder -> folders it includes)

Python 3 standard library only.
"""

import argparse
import io
import os
import re
import shutil
import sys
import tempfile

SCANNED = ("comm", "topology", "engine", "plugins", "tools", "include")
EXTENSIONS = (".h", ".cpp", ".cu", ".cuh")
# Folders whose subfolders are nodes of their own (see above).
SUBTREE_NODES = ("comm/transport",)
# comm's layers, lowest first: a folder never includes one after it (base <- transport <-
# algorithms <- core <- device <- api). comm/transport stands for its whole subtree.
COMM_LAYERS = ("comm/base", "comm/transport", "comm/algorithms", "comm/core", "comm/device",
               "comm/api")

# Edges between folders that close a cycle, tolerated while the folders they join are reshaped:
# each is left out of the cycle search, and one that no longer exists is a fault, so that the
# list only shrinks. Empty since engine/train was split and the CUDA AdamW step took its
# hyperparameters as values (engine/device no longer includes engine/optim). Never add to it.
KNOWN_BACK_EDGES = {}

INCLUDE_LINE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def under(path, prefix):
    """Whether `path` (a file or a folder node) is `prefix` or inside it."""
    return path == prefix or path.startswith(prefix + "/")


def rule_violation(src_node, dst_file):
    """The rule an include from folder `src_node` of the file `dst_file` breaks, or None."""
    top, dst_top = src_node.split("/")[0], dst_file.split("/")[0]
    if top == "comm" and dst_top in ("engine", "plugins", "tools"):
        return "comm never includes engine/, plugins/ or tools/"
    if top == "comm":
        src_layer = next((i for i, l in enumerate(COMM_LAYERS) if under(src_node, l)), None)
        dst_layer = next((i for i, l in enumerate(COMM_LAYERS) if under(dst_file, l)), None)
        if src_layer is not None and dst_layer is not None and dst_layer > src_layer:
            return "comm's layers run %s: %s never includes %s" % (
                " <- ".join(COMM_LAYERS), COMM_LAYERS[src_layer], COMM_LAYERS[dst_layer])
    if top == "plugins":
        if dst_top == "plugins" and not under(dst_file, src_node):
            return "a plugin never includes another plugin's folder"
        if dst_top not in ("plugins", "include"):
            return "plugins see only include/plexus/ (plugin.h and plexus.h) and their own folder"
    if top == "topology":
        if dst_top in ("engine", "plugins", "tools") or under(dst_file, "comm/core") or \
                under(dst_file, "comm/api") or under(dst_file, "comm/device"):
            return "topology never includes comm/core (nor comm/device, comm/api), engine/, " \
                   "plugins/ or tools/"
    if top == "include" and dst_top != "include":
        return "the public headers (include/) include only include/"
    if top == "engine" and dst_top in ("plugins", "tools"):
        return "the engine never includes plugins/ or tools/"
    return None


def node_of(path):
    """The folder node of a root-relative file path."""
    parts = path.split("/")
    for subtree in SUBTREE_NODES:
        depth = len(subtree.split("/"))
        if under(path, subtree) and len(parts) > depth + 1:
            return "/".join(parts[:depth + 1])
    if len(parts) <= 2:
        return parts[0]
    return "/".join(parts[:2])


def resolve(root, including, name):
    """The root-relative path of the file `#include "name"` in `including` reads, or None."""
    for base in (os.path.dirname(including), "", "include"):
        candidate = os.path.normpath(os.path.join(base, name))
        if not candidate.startswith("..") and os.path.isfile(os.path.join(root, candidate)):
            return candidate.replace(os.sep, "/")
    return None


def scan(root):
    """Folder edges {src: {dst: (file, line, target)}}, and rule breaks
    [(file, line, target, rule)]."""
    edges, breaks = {}, []
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for filename in sorted(filenames):
                if not filename.endswith(EXTENSIONS):
                    continue
                path = os.path.relpath(os.path.join(dirpath, filename), root).replace(os.sep, "/")
                src = node_of(path)
                edges.setdefault(src, {})
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE_LINE.match(line)
                        if not m:
                            continue
                        target = resolve(root, path, m.group(1))
                        if target is None:
                            continue
                        rule = rule_violation(src, target)
                        if rule:
                            breaks.append((path, number, target, rule))
                        dst = node_of(target)
                        if dst != src:
                            edges[src].setdefault(dst, (path, number, target))
    return edges, breaks


def find_cycles(graph):
    """([a, b, ..., a], component): one cycle per strongly connected component of more than one
    node, with the component's folders."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = [0]

    def strongconnect(v):  # Tarjan's algorithm; graphs here have a few dozen nodes
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(set(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)

    cycles = []
    for component in components:
        start = min(component)
        # Shortest path back to `start` inside the component (breadth first).
        previous, frontier, found = {start: None}, [start], None
        while frontier and found is None:
            next_frontier = []
            for v in frontier:
                for w in sorted(graph.get(v, ())):
                    if w not in component:
                        continue
                    if w == start:
                        found = v
                        break
                    if w not in previous:
                        previous[w] = v
                        next_frontier.append(w)
                if found is not None:
                    break
            frontier = next_frontier
        path, v = [start], found
        while v is not None and v != start:
            path.insert(1, v)
            v = previous[v]
        cycles.append((path + [start], component))
    return cycles


def check(root, out, known_back_edges=None):
    """Prints what is wrong with the tree at `root`; returns the number of faults."""
    if known_back_edges is None:
        known_back_edges = KNOWN_BACK_EDGES
    edges, breaks = scan(root)
    graph = {src: set(dsts) for src, dsts in edges.items()}
    faults = 0
    for (a, b), where in sorted(known_back_edges.items()):
        if b in graph.get(a, ()):
            graph[a].discard(b)
            out.write("known back edge, left out of the cycle search: %s -> %s (%s)\n"
                      % (a, b, where))
        else:
            faults += 1
            out.write("known back edge %s -> %s is gone: remove it from KNOWN_BACK_EDGES\n"
                      % (a, b))
    for cycle, component in find_cycles(graph):
        faults += 1
        out.write("include cycle between folders: %s\n" % " -> ".join(cycle))
        for a, b in zip(cycle, cycle[1:]):
            path, number, target = edges[a][b]
            out.write("  %s -> %s: %s:%d includes %s\n" % (a, b, path, number, target))
        if len(component) > len(cycle) - 1:
            out.write("  (these folders all reach each other: %s)\n" % " ".join(sorted(component)))
    for path, number, target, rule in breaks:
        faults += 1
        out.write("%s:%d includes %s: %s\n" % (path, number, target, rule))
    return faults


def self_test():
    """Plants faults in temporary trees; returns the number of checks that failed."""
    failures = []

    def tree(files):
        root = tempfile.mkdtemp(prefix="plexus-include-graph-")
        for path, includes in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write("// %s\n#pragma once\n#include <vector>\n" % path)
                for name in includes:
                    f.write('#include "%s"\n' % name)
        return root

    def expect(what, files, wanted, unwanted=(), known=None):
        known = known or {}
        out = io.StringIO()
        root = tree(files)
        try:
            faults = check(root, out, known)
        finally:
            shutil.rmtree(root)
        text = out.getvalue()
        ok = (faults > 0) == bool(wanted)
        ok = ok and all(w in text for w in wanted) and not any(u in text for u in unwanted)
        print("%s: %s" % ("ok  " if ok else "FAIL", what))
        if not ok:
            failures.append(what)
            print("  wanted %r, not %r; got %d faults:\n%s" % (wanted, unwanted, faults, text))

    # The mapping of paths to folders.
    for path, node in (("comm/base/error.h", "comm/base"), ("comm/topology_bridge.h", "comm"),
                       ("comm/transport/transport.h", "comm/transport"),
                       ("comm/transport/ofi/endpoint.cpp", "comm/transport/ofi"),
                       ("engine/model/layers/attention.cpp", "engine/model"),
                       ("engine/state/units.h", "engine/state"), ("topology/host.h", "topology"),
                       ("include/plexus/plugin.h", "include/plexus")):
        ok = node_of(path) == node
        print("%s: %s is in %s" % ("ok  " if ok else "FAIL", path, node))
        if not ok:
            failures.append(path)

    clean = {
        "include/plexus/plexus.h": [],
        "include/plexus/plugin.h": ["plexus/plexus.h"],
        "comm/base/error.h": ["plexus/plexus.h"],
        "comm/transport/transport.h": ["comm/base/error.h"],
        "comm/transport/ofi/endpoint.h": ["comm/transport/transport.h", "comm/base/error.h"],
        "comm/algorithms/ring.h": ["comm/transport/transport.h"],
        "comm/core/communicator.h": ["comm/algorithms/ring.h", "comm/transport/ofi/endpoint.h"],
        "comm/device/state.h": ["comm/core/communicator.h"],
        "comm/api/c_api.cpp": ["comm/device/state.h", "comm/core/communicator.h"],
        "engine/state/units.h": ["plexus/plexus.h"],
        "engine/train/trainer.cpp": ["engine/state/units.h", "topology/host.h"],
        "topology/host.h": ["topology/settings/table.h"],
        "topology/settings/table.h": [],
        "plugins/zero/zero.cpp": ["plexus/plugin.h", "plan.h"],
        "plugins/zero/plan.h": [],
        "tools/plexus-train/main.cpp": ["engine/train/trainer.cpp", "plexus/plexus.h"],
    }
    expect("a clean tree passes", clean, [])

    def planted(extra):
        files = {path: list(includes) for path, includes in clean.items()}
        for path, includes in extra.items():
            files.setdefault(path, []).extend(includes)
        return files

    # Two engine folders that are not named anywhere in this script.
    expect("a cycle between two folders is found and named",
           planted({"engine/state/units.h": ["engine/train/trainer.cpp"]}),
           ["include cycle between folders: engine/state -> engine/train -> engine/state",
            "engine/state/units.h:5 includes engine/train/trainer.cpp"])
    expect("a cycle through three folders is found and named",
           planted({"engine/state/units.h": ["engine/checkpoint/file.h"],
                    "engine/checkpoint/file.h": ["engine/train/trainer.cpp"]}),
           ["include cycle between folders: engine/checkpoint -> engine/train -> engine/state -> "
            "engine/checkpoint"])
    expect("a cycle between two transports is found",
           planted({"comm/transport/ucx/ucx.h": ["comm/transport/ofi/endpoint.h"],
                    "comm/transport/ofi/endpoint.h": ["comm/transport/ucx/ucx.h"]}),
           ["include cycle between folders: comm/transport/ofi -> comm/transport/ucx -> "
            "comm/transport/ofi"])
    expect("an include between files of one folder is no cycle",
           planted({"comm/base/log.h": ["comm/base/error.h"],
                    "comm/base/error.h": ["comm/base/log.h"]}), [])
    expect("a transport that includes an algorithm is refused",
           planted({"comm/transport/ofi/endpoint.h": ["comm/algorithms/ring.h"]}),
           ["comm/transport/ofi/endpoint.h:6 includes comm/algorithms/ring.h",
            "comm/transport never includes comm/algorithms"])
    expect("comm/core that includes comm/device is refused (communicator.h forward-declares)",
           planted({"comm/core/communicator.h": ["comm/device/state.h"]}),
           ["comm/core never includes comm/device"])
    expect("comm that includes the engine is refused",
           planted({"comm/base/error.h": ["engine/state/units.h"]}),
           ["comm/base/error.h:5 includes engine/state/units.h: comm never includes engine/"])
    expect("a plugin that includes another plugin's folder is refused",
           planted({"plugins/ckpt/ckpt.cpp": ["../zero/plan.h"]}),
           ["plugins/ckpt/ckpt.cpp:4 includes plugins/zero/plan.h: "
            "a plugin never includes another"])
    expect("a plugin that includes the engine's internals is refused",
           planted({"plugins/zero/zero.cpp": ["engine/state/units.h"]}),
           ["plugins see only include/plexus/"])
    expect("topology that includes comm/core is refused",
           planted({"topology/host.h": ["comm/core/communicator.h"]}),
           ["topology/host.h:5 includes comm/core/communicator.h: topology never includes"])
    expect("a public header that includes the tree is refused",
           planted({"include/plexus/plugin.h": ["engine/state/units.h"]}),
           ["the public headers (include/) include only include/"])
    back = {("engine/state", "engine/train"): "units.h includes trainer.cpp"}
    expect("a known back edge is left out of the cycle search",
           planted({"engine/state/units.h": ["engine/train/trainer.cpp"]}), [],
           known=back)
    expect("a known back edge that is gone is a fault", clean,
           ["known back edge engine/state -> engine/train is gone"], known=back)
    expect("a known back edge hides no other cycle",
           planted({"engine/state/units.h": ["engine/train/trainer.cpp"],
                    "topology/settings/table.h": ["topology/host.h"]}),
           ["include cycle between folders: topology -> topology/settings -> topology"],
           known=back)
    expect("a cycle through tools is found",
           planted({"engine/state/units.h": ["tools/plexus-train/main.cpp"]}),
           ["include cycle between folders: engine/state -> tools/plexus-train -> engine/train -> "
            "engine/state"])
    expect("every folder of a knot of cycles is named",
           planted({"engine/state/units.h": ["engine/train/trainer.cpp"],
                    "engine/train/trainer.cpp": ["engine/zoo/zoo.h"],
                    "engine/zoo/zoo.h": ["engine/train/trainer.cpp"]}),
           ["include cycle between folders: engine/state -> engine/train -> engine/state",
            "(these folders all reach each other: engine/state engine/train engine/zoo)"])
    expect("a quoted name found nowhere is left out",
           planted({"comm/base/error.h": ["cuda_runtime.h"]}), [])
    return len(failures)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root",
                        default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--print", action="store_true", dest="print_graph")
    args = parser.parse_args()
    if args.self_test:
        failed = self_test()
        print("self-test: %s" % ("%d checks failed" % failed if failed else "all checks passed"))
        return 1 if failed else 0
    if not all(os.path.isdir(os.path.join(args.root, top)) for top in ("comm", "include")):
        sys.stderr.write("check-include-graph.py: --root %s: no comm/ and include/ there\n"
                         % args.root)
        return 2
    if args.print_graph:
        edges, _ = scan(args.root)
        for src in sorted(edges):
            print("%s -> %s" % (src, " ".join(sorted(edges[src])) or "(nothing)"))
        return 0
    faults = check(args.root, sys.stdout)
    if faults:
        print("check-include-graph.py: %d fault(s) in %s" % (faults, args.root))
        return 1
    edges, _ = scan(args.root)
    print("check-include-graph.py: %d folders, %d edges between them, no cycle, the rules hold"
          % (len(edges), sum(len(d) for d in edges.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
