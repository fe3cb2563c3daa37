# 2 cores (AMD EPYC), 24 GiB, no GPU; nothing else running. Binaries: `cargo build --release
# -p zkpipe-cli --bin zkpipe` of 823be99 (old: the stores unpack a packed witness) and of
# this change (new: handed back as stored, read packed by the engine).
zkpipe synth --domain 2^20 --values sha256 c.r1cs w.wtns      # 1,048,574 constraints
zkpipe setup --dev c.r1cs keys/k.zkey                          # BN254, 793.9 MiB
JOBS=8 lab/exp042/resume_rss.sh /tmp/exp042n 3 old=/tmp/exp042n/zkpipe-old new=/tmp/exp042n/zkpipe-new
