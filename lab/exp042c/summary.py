"""Min/median/max of jobs/s per (variant, witness size, clients) from run.sh's cells.txt."""
import statistics
import sys
from collections import defaultdict

cells = defaultdict(list)
for line in open(sys.argv[1]):
    kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
    key = (int(kv["witness_bytes"]), int(kv["clients"]), kv["variant"])
    cells[key].append(float(kv["jobs_per_s"]))
print("| witness | clients | variant | rounds | min jobs/s | median | max |")
print("|---|---|---|---|---|---|---|")
for (size, c, v), xs in sorted(cells.items(), key=lambda x: (-x[0][0], x[0][1], x[0][2])):
    print(f"| {size} B | {c} | {v} | {len(xs)} | {min(xs):.0f} | {statistics.median(xs):.0f} | {max(xs):.0f} |")
