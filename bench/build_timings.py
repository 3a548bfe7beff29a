"""Where a cargo build's time went, from its `cargo build --timings` HTML report.

    python3 bench/build_timings.py TARGET/cargo-timings/cargo-timing-<stamp>.html [N]

Prints the build's wall time, the summed time of all its units, that time by crate family
(DataFusion, Lance, arrow, engram's own, C libraries built by build scripts, ...) and the N
(default 25) longest units.
"""
import collections
import json
import re
import sys

FAMILIES = ["datafusion", "lance", "arrow", "engram", "sqlparser", "parquet", "tokenizers",
            "timely", "differential", "regex", "tokio", "serde", "object_store", "reqwest",
            "hyper", "axum", "syn", "prost", "ort", "rdkafka"]


def family(unit):
    if unit["mode"] == "run-custom-build":
        return "build scripts (run)"
    return next((f for f in FAMILIES if unit["name"].startswith(f)), "other")


def main():
    html = open(sys.argv[1]).read()
    units = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", html, re.S).group(1))
    longest = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    wall = max(u["start"] + u["duration"] for u in units)
    summed = sum(u["duration"] for u in units)
    print(f"{len(units)} units, wall {wall / 60:.1f} min, summed unit time {summed / 60:.1f} min")
    by_family = collections.Counter()
    for u in units:
        by_family[family(u)] += u["duration"]
    print("\nby family: summed minutes, share")
    for name, seconds in by_family.most_common():
        print(f"  {name:22s} {seconds / 60:6.1f} {seconds / summed:6.1%}")
    print(f"\nthe {longest} longest units: seconds, start (min)")
    for u in sorted(units, key=lambda u: -u["duration"])[:longest]:
        mode = "" if u["mode"] == "todo" else u["mode"]  # "todo": cargo's label for a plain build
        print(f"  {u['name']:38s} {mode:18s} {u['duration']:6.1f} {u['start'] / 60:6.1f}")


if __name__ == "__main__":
    main()
