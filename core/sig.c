// SPDX-License-Identifier: GPL-2.0
/*
 * sig.c - does a target carry data a user would miss?  Looks for the
 * signatures of partition tables, volume managers, RAID and encryption
 * containers, swap and file systems at the places blkid (util-linux's
 * libblkid) documents for them, and names what it finds as blkid does.
 * The controller runs blkid -p itself; this probe is what the module and
 * the runner can do on their own, so it covers the common formats and errs
 * towards "found": a false find costs an allow_overwrite=1, a miss costs
 * a user's data.
 */
#include "pl_safe.h"

#define KiB	1024ULL

struct pl_sig_src {
	pl_sig_read_fn rd;
	void *ctx;
	u64 size;
	bool unreadable;
};

/* len bytes at off into buf; false outside the target or when unreadable */
static bool sig_read(struct pl_sig_src *s, u64 off, void *buf, unsigned int len)
{
	if (off > s->size || len > s->size - off)
		return false;
	if (s->rd(s->ctx, off, buf, len)) {
		s->unreadable = true;
		return false;
	}
	return true;
}

static bool sig_is(struct pl_sig_src *s, u64 off, const char *magic, unsigned int len)
{
	u8 buf[16];

	return len <= sizeof(buf) && sig_read(s, off, buf, len) && !memcmp(buf, magic, len);
}

static u16 le16(const u8 *p)
{
	return p[0] | (u16)p[1] << 8;
}

static u32 le32(const u8 *p)
{
	return le16(p) | (u32)le16(p + 2) << 16;
}

static u32 be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static u64 le64(const u8 *p)
{
	return le32(p) | (u64)le32(p + 4) << 32;
}

static u64 be64(const u8 *p)
{
	return (u64)be32(p) << 32 | be32(p + 4);
}

/* a signature that is a fixed string at a fixed offset from the start */
struct pl_magic {
	const char *name;
	u32 off;
	u8 len;
	const char *magic;
};

#define BCACHE_MAGIC	"\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81"
#define BCACHEFS_MAGIC	"\xc6\x85\x73\xf6\x66\xce\x90\xa9\xd9\x6a\x60\xcf\x80\x3d\xf7\xef"

static const struct pl_magic pl_magics[] = {
	/* containers first: what they hold starts further in */
	{ "crypto_LUKS", 0, 6, "LUKS\xba\xbe" },
	/* a LUKS2 secondary header, when the primary one was wiped */
	{ "crypto_LUKS", 0x4000, 6, "SKUL\xba\xbe" },
	{ "crypto_LUKS", 0x8000, 6, "SKUL\xba\xbe" },
	{ "crypto_LUKS", 0x10000, 6, "SKUL\xba\xbe" },
	{ "crypto_LUKS", 0x20000, 6, "SKUL\xba\xbe" },
	{ "crypto_LUKS", 0x40000, 6, "SKUL\xba\xbe" },
	{ "crypto_LUKS", 0x80000, 6, "SKUL\xba\xbe" },
	{ "crypto_LUKS", 0x100000, 6, "SKUL\xba\xbe" },
	{ "crypto_LUKS", 0x200000, 6, "SKUL\xba\xbe" },
	{ "crypto_LUKS", 0x400000, 6, "SKUL\xba\xbe" },
	/* the LVM2 label: "LABELONE" in one of the first four sectors, type at +24 */
	{ "LVM2_member", 0x018, 8, "LVM2 001" },
	{ "LVM2_member", 0x218, 8, "LVM2 001" },
	{ "LVM2_member", 0x418, 8, "LVM2 001" },
	{ "LVM2_member", 0x618, 8, "LVM2 001" },
	/* the superblock at 4 KiB; its magic follows csum, offset, version */
	{ "bcache", 0x1018, 16, BCACHE_MAGIC },
	{ "bcachefs", 0x1018, 16, BCACHEFS_MAGIC },
	{ "DM_integrity", 0, 8, "integrt\0" },
	{ "DM_verity_hash", 0, 8, "verity\0\0" },
	{ "VDO", 0, 8, "dmvdo001" },
	/* file systems */
	{ "xfs", 0, 4, "XFSB" },
	{ "btrfs", 0x10040, 8, "_BHRfS_M" },
	{ "f2fs", 0x400, 4, "\x10\x20\xf5\xf2" },
	{ "erofs", 0x400, 4, "\xe2\xe1\xf5\xe0" },
	{ "ntfs", 3, 8, "NTFS    " },
	{ "exfat", 3, 8, "EXFAT   " },
	{ "BitLocker", 3, 8, "-FVE-FS-" },
	{ "squashfs", 0, 4, "hsqs" },
	{ "squashfs3", 0, 4, "sqsh" },
	{ "iso9660", 0x8001, 5, "CD001" },
	{ "udf", 0x8001, 5, "BEA01" },
	{ "jfs", 0x8000, 4, "JFS1" },
	{ "reiserfs", 0x10034, 8, "ReIsErFs" },
	{ "reiserfs", 0x10034, 9, "ReIsEr2Fs" },
	{ "reiserfs", 0x10034, 9, "ReIsEr3Fs" },
	{ "reiserfs", 0x2034, 8, "ReIsErFs" },
	{ "reiser4", 0x10000, 7, "ReIsEr4" },
	{ "hfsplus", 0x400, 4, "H+\0\x04" },
	{ "hfsplus", 0x400, 4, "HX\0\x05" },
	{ "apfs", 32, 4, "NXSB" },
};

#define MD_MAGIC	0xa92b4efcU

/* an md superblock of version 1.x at off (1.1: 0, 1.2: 4 KiB, 1.0: near the end) */
static bool md1_at(struct pl_sig_src *s, u64 off)
{
	u8 b[8];

	return sig_read(s, off, b, 8) && le32(b) == MD_MAGIC && le32(b + 4) == 1;
}

/* version 0.90: in the last 64 KiB-aligned 64 KiB block, in either byte order */
static bool md0_at_end(struct pl_sig_src *s)
{
	u8 b[4];

	if (s->size < 0x20000)
		return false;
	return sig_read(s, (s->size & ~0xffffULL) - 0x10000, b, 4) &&
	       (le32(b) == MD_MAGIC || be32(b) == MD_MAGIC);
}

static const char *sig_ext(struct pl_sig_src *s)
{
	/* the ext2/3/4 superblock at 1 KiB: up to the ro_compat features */
	u8 sb[0x68];
	u32 compat, incompat, ro;

	if (!sig_read(s, 0x400, sb, sizeof(sb)) || le16(sb + 0x38) != 0xef53)
		return NULL;
	/* block size 1 KiB << log (at most 64 KiB), revision 0 or 1 */
	if (le32(sb + 0x18) > 6 || le32(sb + 0x4c) > 1)
		return NULL;
	compat = le32(sb + 0x5c);
	incompat = le32(sb + 0x60);
	ro = le32(sb + 0x64);
	if (incompat & 0x8)		/* an external journal */
		return "jbd";
	/* beyond what ext3 knows (filetype, recover, meta_bg; sparse_super, large_file, btree_dir) */
	if ((incompat & ~0x16U) || (ro & ~0x7U))
		return "ext4";
	return compat & 0x4 ? "ext3" : "ext2";
}

static bool pow2_between(u32 v, u32 lo, u32 hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

/* a FAT boot sector: jump, sane geometry, a FAT type string, 0x55aa */
static bool sig_vfat(struct pl_sig_src *s)
{
	u8 b[0x5a], tail[2];

	if (!sig_read(s, 0, b, sizeof(b)) || (b[0] != 0xeb && b[0] != 0xe9))
		return false;
	/* bytes per sector, sectors per cluster, reserved sectors, FATs, media */
	if (!pow2_between(le16(b + 0x0b), 512, 4096) || !pow2_between(b[0x0d], 1, 128) ||
	    !le16(b + 0x0e) || !b[0x10] || b[0x10] > 4 || (b[0x15] != 0xf0 && b[0x15] < 0xf8))
		return false;
	if (!sig_read(s, 0x1fe, tail, 2) || tail[0] != 0x55 || tail[1] != 0xaa)
		return false;
	return !memcmp(b + 0x36, "FAT", 3) || !memcmp(b + 0x52, "FAT32   ", 8) ||
	       !memcmp(b + 0x36, "MSDOS", 5) || !memcmp(b + 0x52, "MSWIN", 5);
}

/* swap and hibernation images: the magic ends the first page, whatever its size */
static const char *sig_swap(struct pl_sig_src *s)
{
	u64 page;
	u8 b[10];

	for (page = 4 * KiB; page <= 64 * KiB; page <<= 1) {
		if (!sig_read(s, page - 10, b, 10))
			continue;
		if (!memcmp(b, "SWAPSPACE2", 10) || !memcmp(b, "SWAP-SPACE", 10))
			return "swap";
		if (!memcmp(b, "S1SUSPEND", 9) || !memcmp(b, "S2SUSPEND", 9) ||
		    !memcmp(b, "ULSUSPEND", 9) || !memcmp(b, "LINHIB0001", 10))
			return "swsuspend";
	}
	return NULL;
}

/*
 * ZFS: four 256 KiB labels, two at the start and two at the end; each has
 * an uberblock ring in its second half, 1 KiB (or larger) slots that start
 * with the uberblock magic in the pool's byte order.
 */
static bool sig_zfs(struct pl_sig_src *s)
{
	u64 label[4], end = s->size & ~(256 * KiB - 1), slot;
	unsigned int l, n = 0;
	u8 b[8];

	if (s->size < 64 * 1024 * KiB)		/* ZFS refuses smaller devices */
		return false;
	label[n++] = 0;
	label[n++] = 256 * KiB;
	label[n++] = end - 512 * KiB;
	label[n++] = end - 256 * KiB;
	for (l = 0; l < n; l++)
		for (slot = 0; slot < 128; slot++)
			if (sig_read(s, label[l] + 128 * KiB + slot * KiB, b, 8) &&
			    (le64(b) == 0x00bab10cULL || be64(b) == 0x00bab10cULL))
				return true;
	return false;
}

/* the GPT header at LBA 1, for 512-byte and 4 KiB logical blocks */
static bool sig_gpt(struct pl_sig_src *s)
{
	return sig_is(s, 512, "EFI PART", 8) || sig_is(s, 4096, "EFI PART", 8);
}

/* the backup GPT header in the last logical block */
static bool sig_gpt_backup(struct pl_sig_src *s)
{
	return s->size >= 8192 &&
	       (sig_is(s, s->size - 512, "EFI PART", 8) || sig_is(s, s->size - 4096, "EFI PART", 8));
}

/*
 * An MBR: 0x55aa and four entries whose boot flags are 0x00 or 0x80 (an
 * empty table counts: blkid reports it too).  A protective MBR (type 0xee)
 * without a GPT header is "PMBR".
 */
static const char *sig_mbr(struct pl_sig_src *s)
{
	u8 b[66];
	bool pmbr = false;
	int i;

	if (!sig_read(s, 0x1be, b, sizeof(b)) || b[64] != 0x55 || b[65] != 0xaa)
		return NULL;
	for (i = 0; i < 4; i++) {
		if (b[16 * i] != 0 && b[16 * i] != 0x80)
			return NULL;
		if (b[16 * i + 4] == 0xee)
			pmbr = true;
	}
	return pmbr ? "PMBR" : "dos";
}

const char *pl_sig_probe(pl_sig_read_fn rd, void *ctx, u64 size)
{
	struct pl_sig_src s = { .rd = rd, .ctx = ctx, .size = size };
	const char *name;
	unsigned int i;

	for (i = 0; i < sizeof(pl_magics) / sizeof(pl_magics[0]); i++)
		if (sig_is(&s, pl_magics[i].off, pl_magics[i].magic, pl_magics[i].len))
			return pl_magics[i].name;
	if (md1_at(&s, 0) || md1_at(&s, 4 * KiB))
		return "linux_raid_member";
	name = sig_ext(&s);
	if (name)
		return name;
	if (sig_vfat(&s))
		return "vfat";
	name = sig_swap(&s);
	if (name)
		return name;
	if (sig_zfs(&s))
		return "zfs_member";
	if (sig_gpt(&s))
		return "gpt";
	name = sig_mbr(&s);
	if (name)
		return name;
	/* what lives at the end: md 0.90 and 1.0 superblocks, the backup GPT */
	if (md0_at_end(&s) || (s.size >= 0x3000 && md1_at(&s, (s.size & ~0xfffULL) - 0x2000)))
		return "linux_raid_member";
	if (sig_gpt_backup(&s))
		return "gpt";
	return s.unreadable ? "unreadable" : "none";
}
