// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-unpack.c — a layer tarball through unpack's entry judging, in memory
 *
 * unpack_judge_layer() runs libarchive's tar reader (with the gzip and zstd filters) over the
 * input and every entry through judge_entry(), the code unpack_layer() runs on each entry before
 * it touches the tree (names, limits, whiteouts, types, link targets, declared sizes, each data
 * block against them). Nothing is written to the disk, so this does thousands of runs a second
 * (docs/measurements.md); fuzz-unpack-tree does the tree half on the same corpus. Small limits
 * make the limit checks reachable with small inputs; the stats must agree with what was taken.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "rootfs/unpack.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unpack_limits lim;
	struct unpack_stats st = { 0 };
	int r;

	if (size > (1u << 20))
		return 0;
	log_set_quiet(true);
	unpack_limits_default(&lim);
	lim.max_entry_bytes = 1 << 20;
	lim.max_total_bytes = 4 << 20;
	lim.max_entries = 2000;
	lim.max_hardlinks = 64;
	lim.max_pathset_bytes = 64 << 10;
	lim.max_depth = 32;
	lim.max_xattrs = 16;
	r = unpack_judge_layer(data, size, "fuzz layer", &lim, &st);
	if (r < 0 && r != -EPERM && r != -EINVAL && r != -EIO && r != -ENOMEM)
		abort(); /* a code the callers do not expect */
	if (st.entries > lim.max_entries + 1 || st.hardlinks > lim.max_hardlinks || st.bytes > lim.max_total_bytes ||
	    st.files + st.dirs + st.symlinks + st.hardlinks + st.whiteouts + st.devices_skipped > st.entries)
		abort(); /* a limit let through, or an entry counted twice */
	return 0;
}
