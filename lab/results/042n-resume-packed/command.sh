# 2 cores (AMD EPYC), 24 GiB, no GPU; nothing else running. Binaries: `cargo build --release
# -p zkpipe-cli --bin zkpipe` of 823be99 (old: the stores unpack a packed witness) and of
# this change (new: handed back as stored, read packed by the engine).
zkpipe synth --domain 2^20 --values sha256 c.r1cs w.wtns      # 1,048,574 constraints
zkpipe setup --dev c.r1cs keys/k.zkey                          # BN254, 793.9 MiB
JOBS=8 lab/exp042/resume_rss.sh /tmp/exp042n 3 old=/tmp/exp042n/zkpipe-old new=/tmp/exp042n/zkpipe-new
# Part 2: packed witnesses wait for admission packed. before = the build above (this
# change's first commit, 2ed1d7b), after = the next (converted by the synthesis stage).
JOBS=8 WINDOW=20 SET="memory.host_limit=2GiB" lab/exp042/resume_rss.sh /tmp/exp042n 3 \
  before=/tmp/exp042n/zkpipe-new after=/tmp/exp042n/zkpipe-new2
