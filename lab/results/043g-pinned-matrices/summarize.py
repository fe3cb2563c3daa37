# Per-proof totals of lab 043g (min/median/max over every run; CALLS=123 picks calls): python3 summarize.py
import re,sys,glob,statistics as st
runs={}; stages={}
import os
CALLS=os.environ.get("CALLS","1234")
for f in sorted(g for g in glob.glob("call*/stream-bn254-24.txt") if g[4] in CALLS):
    h=None
    for line in open(f):
        m=re.match(r'== bn254 2\^24 round \d+ (\S+) batch (\d+)',line)
        if m: h=(m.group(1),int(m.group(2)),f.split('/')[0]); continue
        m=re.match(r'\| (\*\*prove total\*\*|\w+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|',line)
        if m and h:
            name=m.group(1).strip('*')
            vals=[float(m.group(2)),float(m.group(5))]
            if name=='prove total': runs.setdefault(h[:2],[]).extend((h[2],v) for v in vals)
            else: stages.setdefault(h[:2]+(name,),[]).append(float(m.group(3)))
for batch in (1,10):
    print(f"batch {batch}")
    base=None
    for k,v in runs.items():
        if k[1]!=batch: continue
        vals=[x/batch for _,x in v]; calls=sorted(set(c for c,_ in v))
        med=st.median(vals)
        if k[0]=='in-core': base=med
        print(f"  {k[0]:16} n={len(vals)} calls={','.join(c[-1] for c in calls)} min {min(vals):8.1f} med {med:8.1f} max {max(vals):8.1f}  ratio(med) {med/base if base else 0:.2f}")
print()
for k,v in sorted(stages.items()):
    if k[2] in ('reduce_device','msm_batch','quotient','msm_a'): print(k, [round(x) for x in v])
