// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-unpack-tree.c — a layer tarball through unpack's real entry handling, into a temporary root
 * corpus: unpack
 *
 * The slow half of the unpack fuzzing (about 100 runs a second: every input makes and removes a
 * tree, on two threads): what only the tree can tell, a parent reached through a symlink, a
 * hardlink's target, replacement and whiteouts on a populated tree. fuzz-unpack runs the entry
 * judging alone, in memory, thousands of times faster; here its verdict is checked against the
 * real unpack's: a layer that unpack_judge_layer() refuses, unpack_layer() refuses too.
 *
 * The input is written to a memfd and applied twice onto the same fresh directory (the second
 * pass replaces, whiteouts and opaque markers then meet a populated tree), with small limits so
 * that a run never fills the disk. After each input the root must still be beneath its parent:
 * anything created next to it means an entry escaped, and aborts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rootfs/unpack.h"
#include "util/log.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char top[64];

static void cleanup(void)
{
	(void)rm_rf(top);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	if (d)
		closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unpack_limits lim;
	struct unpack_stats st = { 0 }, jst = { 0 };
	char root[96];
	int fd, rootfd, judged, r;

	if (size > (1u << 20))
		return 0;
	log_set_quiet(true);
	if (!top[0]) {
		snprintf(top, sizeof(top), "/tmp/aisb-fuzz-unpack-XXXXXX");
		if (!mkdtemp(top))
			abort();
		atexit(cleanup);
	}
	snprintf(root, sizeof(root), "%s/root", top);
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		abort();
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = memfd_create("layer", MFD_CLOEXEC);
	if (rootfd < 0 || fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	unpack_limits_default(&lim);
	lim.max_entry_bytes = 1 << 20;
	lim.max_total_bytes = 4 << 20;
	lim.max_entries = 20000;
	lim.max_pathset_bytes = 1 << 20;
	lim.max_depth = 32;
	judged = unpack_judge_layer(data, size, "fuzz layer", &lim, &jst);
	for (int pass = 0; pass < 2; pass++) {
		if (lseek(fd, 0, SEEK_SET) < 0)
			abort();
		r = unpack_layer(rootfd, fd, "fuzz layer", NULL, &lim, &st);
		if (pass == 0 && judged == -EPERM && r >= 0)
			abort(); /* the judge refused what the unpacker took */
	}
	close(fd);
	close(rootfd);
	/* the only thing in top is root: nothing escaped next to it */
	if (count_entries(top) != 1)
		abort();
	if (rm_rf(root) < 0)
		abort();
	return 0;
}
