#!/bin/bash
# kmod/selftest.sh - smoke test of pmemlab.ko inside a guest (TAP-style output).
#   kmod/selftest.sh <pmemlab.ko> <target> [more insmod params]
# e.g. scripts/vm -- kmod/selftest.sh build/6.1*/pmemlab.ko /dev/pmem0
set -u
ko=$1; tgt=$2; shift 2
S=/sys/kernel/pmemlab
n=0; fails=0
ok()   { n=$((n+1)); echo "ok $n - $*"; }
nok()  { n=$((n+1)); fails=$((fails+1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
w()    { echo "$2" > "$S/$1" 2>/dev/null; }
wait_run() {
	local i
	for i in $(seq 1 600); do
		case $(cat $S/state) in running) sleep 0.2;; *) break;; esac
	done
	cat $S/state
}
refused() { ! w "$1" "$2" && [ -n "$(cat $S/last_error)" ]; }
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

rmmod pmemlab 2>/dev/null
check "insmod $tgt" insmod "$ko" target="$tgt" "$@"
[ -d $S ] || { echo "Bail out! no $S"; exit 1; }
for f in version target target_kind target_size target_node target_page_size tsc_khz \
	 cpu_features widths prefetch_control fs_signature state op_table; do
	echo "# $f: $(cat $S/$f | head -8 | tr '\n' '|')"
done

# bad input is refused, the module keeps working
for kv in "access_size 0" "access_size 65" "access_size -64" "access_size 1Q" "access_size 99999999999999999999999" \
	  "width 12" "op bogus" "op load,,store" "pattern zig" "threads 0" "threads 100000" \
	  "fence_interval 100" "cpus 0-99999" "mode " "duration_ms 0" "window_offset 4095" \
	  "seed -1" "stride 12" "samples 99999999"; do
	set -- $kv
	check "refuse $1='${2:-}'" refused "$1" "${2:-}"
done
check "empty value refused" refused mode ""
check "over-long value refused" refused access_size "$(printf '1%.0s' $(seq 1 300))"

run_case() {	# name, then param=value...
	local name=$1; shift
	local kv
	for kv in "$@"; do w "${kv%%=*}" "${kv#*=}" || { nok "$name: set $kv: $(cat $S/last_error)"; return; }; done
	if ! w run 1; then nok "$name: run refused: $(cat $S/last_error)"; return; fi
	local st; st=$(wait_run)
	if [ "$st" != done ]; then nok "$name: state $st: $(cat $S/last_error)"; return; fi
	local all; all=$(grep '^thread=all' $S/result)
	local ops bytes acc; ops=$(field "$all" ops); bytes=$(field "$all" bytes); acc=$(cat $S/access_size)
	if [ "$ops" -gt 0 ] && [ "$bytes" -eq $((ops * acc)) ]; then
		ok "$name: ops=$ops bw=$(field "$all" bw_mbps) p50=$(field "$all" lat_p50)"
	else
		nok "$name: ops=$ops bytes=$bytes access=$acc"
	fi
}
defaults() { w mode bandwidth; w op load; w width 0; w access_size 64; w stride 0; w pattern seq;
	w threads 1; w duration_ms 200; w count 0; w working_set 16M; w window_offset 0; w fence none;
	w fence_interval 0; w read_pct 0; w probe 0; w samples 0; w cold 0; w placement per-thread;
	w passes 1; w pass_offset 0; }

for mode in bandwidth latency; do
	for op in load ntload store ntstore store+clwb store+clflushopt store+clflush; do
		for pat in seq rand stride hotspot; do
			defaults
			run_case "$mode $op $pat" mode=$mode op=$op pattern=$pat threads=2 count=2000
		done
	done
done
defaults; run_case "bw duration 300ms" duration_ms=300
defaults; run_case "widths 8" width=8 op=ntstore access_size=8 pattern=rand
defaults; run_case "fence sfence every 256" op=store+clwb access_size=1024 fence=sfence fence_interval=256 flush=access
defaults; run_case "mixed 30% reads" op=store read_pct=30 count=1000
defaults; run_case "probe" threads=2 probe=1 op=load,ntstore duration_ms=300
defaults; run_case "latency cold samples" mode=latency cold=1 samples=1000 count=1000
defaults; run_case "xpbuffer passes" op=ntstore access_size=128 pattern=stride stride=256 passes=2 pass_offset=128 working_set=64K count=4096
defaults; run_case "per-dimm" placement=per-dimm interleave_ways=2 interleave_gran=4096 pattern=rand threads=2 count=1000
defaults; run_case "global rand" placement=global pattern=rand threads=2 count=1000
defaults; run_case "delay" delay_ticks=1000 count=200

# -EBUSY during a run, abort
defaults; w duration_ms 5000; w run 1
check "second run gets EBUSY" bash -c "! echo 1 > $S/run 2>/dev/null"
check "param write gets EBUSY" bash -c "! echo 128 > $S/access_size 2>/dev/null"
w abort 1; st=$(wait_run)
check "abort -> error:aborted ($st)" [ "$st" = "error:aborted" ]
# rmmod mid-run
defaults; w duration_ms 10000; w run 1; sleep 0.5
check "rmmod mid-run" rmmod pmemlab
echo "1..$n"
[ $fails -eq 0 ]
