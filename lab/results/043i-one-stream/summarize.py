# Per-proof totals of lab 043i (min/median/max over every run of the calls CALLS picks,
# ms per proof; a job of ten's run divided by ten), each against in-core and against the
# baseline build (/base), and the stages per run:
#   CALLS=1 python3 summarize.py    (the first build: the walk's copies on the legacy stream)
#   CALLS=234 python3 summarize.py  (the second build: on a stream of their own)
import os, re, glob, statistics as st
calls = os.environ.get("CALLS", "234")
runs, stages = {}, {}
for f in sorted(glob.glob("call*/stream-bn254-24.txt")):
    if f[4] not in calls:
        continue
    h = None
    for line in open(f):
        m = re.match(r'== bn254 2\^24 round \d+ (\S+) batch (\d+)', line)
        if m:
            h = (m.group(1), int(m.group(2)))
            continue
        m = re.match(r'\| (\*\*prove total\*\*|\w+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|', line)
        if m and h:
            name = m.group(1).strip('*')
            if name == 'prove total':
                runs.setdefault(h, []).extend([float(m.group(2)), float(m.group(5))])
            else:
                stages.setdefault(h + (name,), []).append(float(m.group(3)))
for batch in (1, 10):
    print(f"batch {batch}" + (" (a job of ten, per proof)" if batch == 10 else " (one proof)"))
    med = lambda v: st.median(v) / batch
    base = med(runs[('in-core', batch)])
    for k, v in sorted(runs.items()):
        if k[1] != batch:
            continue
        vals = [x / batch for x in v]
        m = st.median(vals)
        vs = ""
        if not k[0].endswith("/base") and (k[0] + "/base", batch) in runs:
            vs = f"  vs base {m / med(runs[(k[0] + '/base', batch)]):.3f}"
        print(f"  {k[0]:18} n={len(vals)} min {min(vals):8.1f} med {m:8.1f} max {max(vals):8.1f}  × in-core {m / base:.3f}{vs}")
print()
print("stage medians per run (ms), one value a round:")
for k, v in sorted(stages.items()):
    if k[2] in ('reduce_device', 'msm_batch', 'quotient'):
        print(f"  {k[0]:18} batch {k[1]:2} {k[2]:14} {[round(x) for x in v]}")
