# Per-proof totals of lab 043h (min/median/max over every run of the calls CALLS picks,
# ms per proof; a job of ten's run divided by ten), and the stages that moved:
#   CALLS=123 python3 summarize.py   (the first build: calls 1-3)
#   CALLS=45 python3 summarize.py    (the second build: calls 4-5)
import os, re, glob, statistics as st
calls = os.environ.get("CALLS", "123")
runs, stages = {}, {}
files = glob.glob("call*/stream-bn254-24.txt") + glob.glob("call*/parts/stream-bn254-24.txt")
for f in sorted(g for g in files if g[4] in calls):
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
    base = st.median(runs[('in-core', batch)]) / batch
    for k, v in runs.items():
        if k[1] != batch:
            continue
        vals = [x / batch for x in v]
        med = st.median(vals)
        print(f"  {k[0]:22} n={len(vals)} min {min(vals):8.1f} med {med:8.1f} max {max(vals):8.1f}  ratio(med) {med / base:.2f}")
print()
print("stage medians per run (ms), one value a round:")
for k, v in sorted(stages.items()):
    if k[2] in ('reduce_device', 'msm_batch', 'quotient'):
        print(f"  {k[0]:22} batch {k[1]:2} {k[2]:14} {[round(x) for x in v]}")
