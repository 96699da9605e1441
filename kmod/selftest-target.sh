#!/bin/bash
# kmod/selftest-target.sh - target handling of pmemlab.ko inside a guest (TAP-style output):
# DRAM pages, non-DAX and mounted devices, file system signatures, namespace disabled mid-run.
# DESTRUCTIVE for the namespace: it makes a file system on it and disables it at the end.
#   kmod/selftest-target.sh <pmemlab.ko> /dev/pmemN
set -u
ko=$1; dev=$2
S=/sys/kernel/pmemlab
n=0; fails=0
ok()   { n=$((n+1)); echo "ok $n - $*"; }
nok()  { n=$((n+1)); fails=$((fails+1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
wait_run() {
	local i
	for i in $(seq 1 600); do
		case $(cat $S/state) in running) sleep 0.2;; *) break;; esac
	done
	cat $S/state
}
run1() {	# param=value ... ; prints the final state
	local kv
	for kv in "$@"; do echo "${kv#*=}" > $S/${kv%%=*} || return 1; done
	echo 1 > $S/run || return 1
	wait_run
}
rmmod pmemlab 2>/dev/null

for pages in 4k 2m; do
	if insmod "$ko" target=dram dram_size=16M dram_pages=$pages; then
		ok "dram $pages: page size $(cat $S/target_page_size), node $(cat $S/target_node)"
		st=$(run1 op=store duration_ms=50 threads=2)
		check "dram $pages store run: $st" [ "$st" = done ]
		rmmod pmemlab
	else
		nok "dram $pages insmod"
	fi
done
check "dram_size=1Q refused" bash -c "! insmod $ko target=dram dram_size=1Q 2>/dev/null"
check "dram_pages=1g refused" bash -c "! insmod $ko target=dram dram_pages=1g 2>/dev/null"
check "no target refused" bash -c "! insmod $ko 2>/dev/null"
check "/dev/null refused" bash -c "! insmod $ko target=/dev/null 2>/dev/null"
if modprobe brd rd_nr=1 rd_size=65536 2>/dev/null && [ -b /dev/ram0 ]; then
	check "non-DAX /dev/ram0 refused" bash -c "! insmod $ko target=/dev/ram0 2>/dev/null"
	rmmod brd
fi

# file system signature, mounted device
mkdir -p /tmp/pmnt
if mkfs.ext4 -q -F "$dev" >/dev/null 2>&1; then
	mount "$dev" /tmp/pmnt
	check "mounted $dev refused" bash -c "! insmod $ko target=$dev 2>/dev/null"
	umount /tmp/pmnt
	insmod "$ko" target="$dev"
	check "ext4 signature seen: $(cat $S/fs_signature)" [ "$(cat $S/fs_signature)" = ext4 ]
	check "mount refused while held" bash -c "! mount $dev /tmp/pmnt 2>/dev/null"
	check "write run refused on ext4" bash -c "! echo store > $S/op || ! echo 1 > $S/run 2>/dev/null"
	echo "# last_error: $(cat $S/last_error)"
	st=$(run1 op=load duration_ms=50)
	check "load run allowed on ext4: $st" [ "$st" = done ]
	rmmod pmemlab
	insmod "$ko" target="$dev" allow_overwrite=1
	st=$(run1 op=store duration_ms=50)
	check "store run with allow_overwrite: $st" [ "$st" = done ]
	rmmod pmemlab
	wipefs -a "$dev" >/dev/null 2>&1 || dd if=/dev/zero of="$dev" bs=1M count=1 oflag=direct 2>/dev/null
fi

# namespace disabled under a running module
# the pmem device (e.g. pfn0.0) behind the block device, unbound from its driver by force
nd=$(basename "$(readlink -f /sys/block/${dev#/dev/}/device)")
drv=$(basename "$(readlink -f /sys/bus/nd/devices/$nd/driver)")
insmod "$ko" target="$dev"
echo 60000 > $S/duration_ms; echo 2 > $S/threads; echo ntstore > $S/op; echo 1 > $S/run
sleep 1
echo "# unbinding $nd from $drv"
timeout 120 sh -c "echo $nd > /sys/bus/nd/drivers/$drv/unbind"
st=$(wait_run)
check "namespace disabled mid-run -> $st" [ "$st" = "error:target-gone" ]
check "run refused after the target is gone" bash -c "! echo 1 > $S/run 2>/dev/null"
check "rmmod after target gone" rmmod pmemlab
echo "$nd" > /sys/bus/nd/drivers/$drv/bind 2>/dev/null
echo "1..$n"
[ $fails -eq 0 ]
