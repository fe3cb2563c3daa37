dmesg | grep -i -E "killed process|out of memory" | tail -3; HOST_LIMIT=80GiB PENDING=12 T=540 CLIENTS=8 JOBS=1 bash .carry/k3.sh; dmesg | grep -i -E "killed process|out of memory" | tail -3
