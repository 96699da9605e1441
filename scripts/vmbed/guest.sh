#!/bin/bash
# Runs inside the guest (written by scripts/vm).
set -u
out=@OUT@
exec 3>&1
log() { echo "vm-guest: $*" >&3; echo "vm-guest: $*" >>"$out/setup.err"; }
status() { echo "$1" >"$out/rc"; }
# Guest uptime at each stage, for the host's timing line (boot, namespaces, command).
phase() { echo "$1 $(cut -d' ' -f1 /proc/uptime)" >>"$out/phases"; }

sysval() { cat "$1" 2>/dev/null || true; }

setup_namespaces() {
	local r nvdimm_regions=() legacy_regions=()
	for r in /sys/bus/nd/devices/region*; do
		[ -e "$r" ] || continue
		if [ "$(sysval "$r/mappings")" = "0" ]; then
			legacy_regions+=("$(basename "$r")")
		else
			nvdimm_regions+=("$(basename "$r")")
		fi
	done
	if [ ${#nvdimm_regions[@]} -gt 0 ]; then
		ndctl disable-region all >/dev/null &&
		ndctl init-labels -f all >/dev/null &&
		ndctl enable-region all >/dev/null || { log "ndctl label set-up failed"; return 1; }
		for r in "${nvdimm_regions[@]}"; do
			ndctl create-namespace --mode=fsdax --region="$r" >/dev/null ||
				{ log "create-namespace on $r failed"; return 1; }
		done
	fi
	for r in "${legacy_regions[@]}"; do
		ndctl create-namespace -f -e "${r#region}" --mode=fsdax >/dev/null 2>&1 ||
		ndctl create-namespace -f -e "namespace${r#region}.0" --mode=fsdax >/dev/null ||
			{ log "fsdax on legacy $r failed"; return 1; }
	done
	udevadm settle 2>/dev/null || sleep 1
	# Under load (a TCG guest beside another and the host tests) the block devices of the new
	# namespaces can appear after udev settles: wait for one per region (a run once found none).
	local want=$((${#nvdimm_regions[@]} + ${#legacy_regions[@]})) have n
	for n in $(seq 120); do
		have=$(grep -lx 1 /sys/block/pmem*/queue/dax 2>/dev/null | wc -l)
		[ "$have" -ge "$want" ] && break
		sleep 0.5
	done
	if [ "$have" -lt "$want" ]; then
		log "$have fsdax block devices for $want regions after 60 s: $(ls /sys/block | tr '\n' ' ')"
		return 1
	fi
	PMEMLAB_PMEM=""
	PMEMLAB_PMEM_DRAM=""
	local blk dev region
	for blk in /sys/block/pmem*; do
		[ -e "$blk" ] || continue
		dev=/dev/$(basename "$blk")
		if [ "$(sysval "$blk/queue/dax")" != "1" ]; then
			log "$dev is not DAX-capable"; continue
		fi
		region=$(readlink -f "$blk/device" | grep -o 'region[0-9]*' | head -n 1)
		if [ "$(sysval /sys/bus/nd/devices/$region/mappings)" = "0" ]; then
			PMEMLAB_PMEM_DRAM="$PMEMLAB_PMEM_DRAM $dev"
		else
			PMEMLAB_PMEM="$PMEMLAB_PMEM $dev"
		fi
	done
	export PMEMLAB_PMEM="${PMEMLAB_PMEM# }" PMEMLAB_PMEM_DRAM="${PMEMLAB_PMEM_DRAM# }"
}

# The CXL lanes (--cxl): a 2-way pmem region with two fsdax namespaces, and two 2-way ram regions,
# one onlined as system RAM on its CPU-less node, one a devdax device. The memory of a ram region
# stays offline until asked (memhp_default_state=offline), as daxctl expects to find it.
cxl_wait() {  # NAME...: wait for CXL devices to appear (udev loads the drivers)
	local n
	for n in $(seq 150); do
		local all=1 d
		for d in "$@"; do [ -e "/sys/bus/cxl/devices/$d" ] || all=0; done
		[ $all = 1 ] && return 0
		sleep 0.2
	done
	return 1
}

setup_cxl() {
	exec 4>>"$out/setup.err"  # the stderr of the set-up's commands: the host shows it when a step fails
	local mem=(mem0 mem1) root r nd dax
	modprobe -a cxl_acpi cxl_pci cxl_port cxl_mem cxl_pmem dax_cxl device_dax kmem 2>/dev/null
	cxl_wait "${mem[@]}" || { log "CXL memdevs did not appear"; return 1; }
	udevadm settle -t 20 2>/dev/null
	root=$(basename "$(ls -d /sys/bus/cxl/devices/root0/decoder0.* | head -n 1)")
	PMEMLAB_CXL_NODE="" PMEMLAB_CXL_DAX="" PMEMLAB_CXL_PMEM=""
	if [ "@CXL_RAM@" = 1 ]; then
		# ram regions first: an endpoint decoder maps device addresses above those of the one before
		# it, and a device's ram partition lies below its pmem partition
		for r in 1 2; do
			r=$(@TOP@/scripts/cxl-ram-region "$root" @CXL_GRAN@ "${mem[@]}" 2>&4) ||
				{ log "CXL ram region failed"; return 1; }
			dax=$(basename "$(ls -d /sys/bus/cxl/devices/$r/dax_$r/dax*.* | head -n 1)")
			if [ -z "$PMEMLAB_CXL_NODE" ]; then
				# as ordinary kernel memory (not ZONE_MOVABLE, daxctl's default): the module's DRAM
				# target is a kernel allocation, which movable memory never serves
				daxctl online-memory --no-movable "$dax" >/dev/null 2>&4 ||
					{ log "daxctl online-memory --no-movable $dax failed"; return 1; }
				PMEMLAB_CXL_NODE=$(cat /sys/bus/dax/devices/$dax/target_node)
			else
				daxctl reconfigure-device --mode=devdax "$dax" >/dev/null 2>&4 ||
					{ log "daxctl reconfigure-device --mode=devdax $dax failed"; return 1; }
				PMEMLAB_CXL_DAX=/dev/$dax
			fi
		done
	fi
	r=$(cxl create-region -t pmem -m -d "$root" -w ${#mem[@]} -g @CXL_GRAN@ "${mem[@]}" 2>&4 |
		sed -n 's/^ *"region":"\(region[0-9]*\)".*/\1/p')
	[ -n "$r" ] || { log "cxl create-region -t pmem failed"; return 1; }
	# the nvdimm region the CXL region became (under the CXL nvdimm bridge): the one at its address
	local res=$(cat /sys/bus/cxl/devices/$r/resource) n
	nd=""
	for n in /sys/bus/cxl/devices/nvdimm-bridge*/ndbus*/region*; do
		[ "$(($(cat "$n/resource")))" = "$((res))" ] && nd=$(basename "$n")
	done
	local size blk
	for size in @CXL_NS_SIZES@; do
		# the second namespace of a region is pmemN.M
		blk=$(ndctl create-namespace -r "$nd" -m fsdax --map=mem -s "$size" 2>&4 |
			sed -n 's/^ *"blockdev":"\(pmem[0-9.]*\)".*/\1/p')
		[ -n "$blk" ] || { log "fsdax namespace of $size on $nd ($r) failed"; return 1; }
		PMEMLAB_CXL_PMEM="$PMEMLAB_CXL_PMEM /dev/$blk"
	done
	udevadm settle -t 20 2>/dev/null
	export PMEMLAB_CXL_PMEM="${PMEMLAB_CXL_PMEM# }" PMEMLAB_CXL_NODE PMEMLAB_CXL_DAX PMEMLAB_CXL_DIR=@CXL_DIR@
}

finish() {
	dmesg >"$out/dmesg.txt" 2>/dev/null
	sync
}

phase booted
# which file system the host's root reached the guest over (virtio-fs or 9p): the host reports it
findmnt -no FSTYPE / >"$out/rootfs" 2>/dev/null || true
if [ "$(cat "$out/rootfs" 2>/dev/null)" = 9p ]; then
	# 9p caches nothing: matplotlib re-reads its fonts at every figure, tens of thousands of 9p
	# requests a minute. A touch copies each file up into the tmpfs layer of the /usr overlay.
	find -L /usr/share/fonts /usr/share/matplotlib/mpl-data/fonts -type f -print0 2>/dev/null |
		while IFS= read -r -d '' f; do touch -c -r "$f" "$f"; done
	log "fonts copied up (the root is 9p)"
fi
if ! setup_namespaces; then
	status 90; finish; exit 0
fi
if [ "@CXL@" = 1 ] && ! setup_cxl; then
	status 90; finish; exit 0
fi
phase namespaces
log "kernel $(uname -r), fsdax: ${PMEMLAB_PMEM:-none}${PMEMLAB_PMEM_DRAM:+, dram-backed: $PMEMLAB_PMEM_DRAM}"
[ "@CXL@" = 1 ] && log "CXL: fsdax ${PMEMLAB_CXL_PMEM:-none}, system-ram node ${PMEMLAB_CXL_NODE:-none}, devdax ${PMEMLAB_CXL_DAX:-none}"
export PMEMLAB_HMAT=@HMAT@
# The tests load a copy of the module in the guest's own memory (tmpfs): the host's copy is on
# virtio-fs, whose page cache an open drops, so every insmod read the 6.7 MB file again, onto the
# node of the CPU it ran on (6.3 MiB moved between the nodes the placement tests measure).
ko=@KO@
if [ -n "$ko" ]; then
	mkdir -p /run/pmemlab && cp "$ko" /run/pmemlab/pmemlab.ko && ko=/run/pmemlab/pmemlab.ko ||
		log "could not copy the module into /run/pmemlab: the tests load $ko"
fi
export PMEMLAB_VM=1 PMEMLAB_KVER=$(uname -r) PMEMLAB_KO=$ko PMEMLAB_GUEST_LOG="$out/dmesg.txt"
export PATH=@PATH@
cd @CWD@ || { status 91; finish; exit 0; }
@CMD@ >>"$out/output.log" 2>&1 </dev/null
rc=$?
phase command
status "$rc"
finish
