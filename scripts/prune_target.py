#!/usr/bin/env python3
"""Keeps the shared cargo target folder from filling the disk.

Every rebuild of a workspace crate or test leaves its previous artifacts behind under a new
hash in `debug/deps`; over weeks of sessions that grew to 45 GB and a CI run failed with
'No space left on device'. This removes, for the workspace's own artifacts only, every hash
but the newest (third-party crates can legitimately exist in several versions, so they are
kept). When the disk is still short of `--min-free-gb`, it also drops `debug/incremental`,
which cargo rebuilds as needed.

Usage: prune_target.py TARGET_DIR [--min-free-gb N]
"""
import collections
import os
import re
import shutil
import sys

WORKSPACE_LIB = "libengram"


def stale_workspace_artifacts(deps):
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for name in os.listdir(deps):
        m = re.match(r"(.+)-([0-9a-f]{16})(\..*)?$", name)
        if m:
            groups[m.group(1)][m.group(2)].append(os.path.join(deps, name))
    for stem, by_hash in groups.items():
        if stem.startswith("lib") and not stem.startswith(WORKSPACE_LIB):
            continue
        if len(by_hash) < 2:
            continue
        newest = max(by_hash, key=lambda h: max(os.stat(p).st_mtime for p in by_hash[h]))
        for h, paths in by_hash.items():
            if h != newest:
                yield from paths


def free_gb(path):
    return shutil.disk_usage(path).free / 2**30


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    target = args[0]
    min_free = float(args[args.index("--min-free-gb") + 1]) if "--min-free-gb" in args else 20.0
    deps = os.path.join(target, "debug", "deps")
    if not os.path.isdir(deps):
        return
    freed = 0
    for path in stale_workspace_artifacts(deps):
        try:
            freed += os.stat(path).st_size
            os.remove(path)
        except FileNotFoundError:
            pass
    incremental = os.path.join(target, "debug", "incremental")
    if free_gb(target) < min_free and os.path.isdir(incremental):
        shutil.rmtree(incremental, ignore_errors=True)
        print(f"prune_target: under {min_free:.0f} GB free, removed {incremental}")
    print(f"prune_target: removed {freed / 2**30:.1f} GB of stale workspace artifacts; "
          f"{free_gb(target):.1f} GB free")


if __name__ == "__main__":
    main()
