#!/usr/bin/env bash
# On the GPU machine: Nsight Compute's output for the two CUDA examples' kernels (capture.cu), kept
# as the ncu summariser's test data (tests/data/ncu/), and whether ncu works inside a sandbox like
# the candidates' (bwrap, carried in $PROBE with its libraries; as uid 65534 and as root with no
# capabilities). Writes under $OUT:
#   sections.txt     ncu --list-sections
#   raw_<set>.csv    --csv --page raw of the sections the evaluator asks for (--import of a report)
#   probe.txt        versions, permissions, each run's command, exit status and wall time
# Run from the repository root: OUT=dir PROBE=.probe bash bench/ncu/capture.sh
set -uo pipefail
OUT=${OUT:?} PROBE=${PROBE:-.probe}
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
SECTIONS=${SECTIONS:-"SpeedOfLight Occupancy LaunchStats WarpStateStats MemoryWorkloadAnalysis ComputeWorkloadAnalysis SpeedOfLight_RooflineChart"}
work=/tmp/kf_ncu && rm -rf $work && mkdir -p $work && chmod 777 $work
log=$OUT/probe.txt
timed() { local t0=$(date +%s%N); "$@"; local rc=$?; echo "exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms"; return $rc; }
{
  date -u; id; nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -1
  command -v ncu; ncu --version | tail -1
  grep -i profil /proc/driver/nvidia/params
  nvcc -O3 -arch=sm_90 -o $work/capture bench/ncu/capture.cu && chmod 755 $work/capture
  timed $work/capture
} > $log 2>&1
ncu --list-sections > $OUT/sections.txt 2>&1
sec=(); for s in $SECTIONS; do sec+=(--section "$s"); done
base=(--profile-from-start off --clock-control none --cache-control all "${sec[@]}")
{
  echo "### ncu, outside any sandbox, report file"
  timed ncu "${base[@]}" -f -o $work/all $work/capture
  timed ncu --import $work/all.ncu-rep --csv --page raw > $OUT/raw_all.csv
  echo "### ncu --csv --page raw to --log-file directly (softmax only)"
  timed ncu "${base[@]}" --csv --page raw --log-file $work/direct.csv $work/capture softmax
  head -c 600 $work/direct.csv; echo
  echo "### details page of the same report"
  timed ncu --import $work/all.ncu-rep --csv --page details > $work/details.csv; head -c 300 $work/details.csv; echo
  echo "### a range that is never started: what ncu says"
  timed ncu --profile-from-start off --clock-control none --section SpeedOfLight $work/capture none
} >> $log 2>&1
cp $work/details.csv $OUT/details_all.csv 2>/dev/null
B=$PWD/$PROBE/bwrap
export LD_LIBRARY_PATH=$PWD/$PROBE/lib
sys=(); for d in /usr /etc /opt /sys /lib /lib64 /bin /sbin; do
  if [ -L $d ]; then sys+=(--symlink "$(readlink $d)" $d); elif [ -d $d ]; then sys+=(--ro-bind $d $d); fi; done
devs=(); for d in /dev/nvidia*; do devs+=(--dev-bind $d $d); done
box=(--die-with-parent --new-session --unshare-pid --unshare-net --unshare-ipc --unshare-uts
     --unshare-cgroup-try "${sys[@]}" --proc /proc --dev /dev "${devs[@]}" --size 268435456 --tmpfs /dev/shm
     --size 268435456 --tmpfs /tmp --bind $work/box $work/box --remount-ro /dev --remount-ro /
     --chdir $work/box --setenv HOME $work/box --setenv PATH "$PATH" --unsetenv LD_LIBRARY_PATH)
for mode in uid65534 root_nocaps; do
  rm -rf $work/box && mkdir -p $work/box && cp $work/capture $work/box/ && chmod -R 777 $work/box
  {
    echo "### ncu inside bwrap, $mode"
    if [ $mode = uid65534 ]; then
      timed $PWD/$PROBE/setpriv --reuid 65534 --regid 65534 --clear-groups $B --unshare-user "${box[@]}" -- \
        ncu "${base[@]}" -f -o $work/box/r $work/box/capture softmax
    else
      timed $B --cap-drop ALL "${box[@]}" -- ncu "${base[@]}" -f -o $work/box/r $work/box/capture softmax
    fi
    ls -la $work/box
    [ -f $work/box/r.ncu-rep ] && ncu --import $work/box/r.ncu-rep --csv --page raw > $OUT/raw_box_$mode.csv
    echo "### the capture alone in the same bwrap ($mode)"
    if [ $mode = uid65534 ]; then
      timed $PWD/$PROBE/setpriv --reuid 65534 --regid 65534 --clear-groups $B --unshare-user "${box[@]}" -- $work/box/capture softmax
    else
      timed $B --cap-drop ALL "${box[@]}" -- $work/box/capture softmax
    fi
  } >> $log 2>&1
done
ls -la $OUT >> $log
