# Sourced by the exp018 scripts. `counters PID`: system TLB shootdowns (the TLB line of
# /proc/interrupts, summed over CPUs), and process PID's context switches (main thread
# only: /proc/PID/status), page faults and CPU ticks (/proc/PID/stat).
counters() {
  echo "tlb $(awk '/TLB/ {s=0; for(i=2;i<=NF;i++) if ($i ~ /^[0-9]+$/) s+=$i; print s}' /proc/interrupts)"
  awk '/ctxt_switches/ {print $1, $2}' "/proc/$1/status"
  awk '{print "minflt", $10; print "majflt", $12; print "utime_ticks", $14; print "stime_ticks", $15}' "/proc/$1/stat"
}
