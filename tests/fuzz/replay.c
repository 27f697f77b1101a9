// SPDX-License-Identifier: GPL-2.0-or-later
/* replay.c — runs a libFuzzer target over corpus files without libFuzzer.
 *
 * Every fuzz target is linked twice: with clang's -fsanitize=fuzzer for real fuzzing
 * (`make fuzz`), and with this driver for `make check`, which feeds it each file named on the
 * command line or found in the directories named (one level). A crash or sanitizer report
 * fails the test; the corpus is the regression suite.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	if (!f)
		return perror(path), 1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return fprintf(stderr, "%s: read failed\n", path), 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0)
			return perror(argv[i]), 1;
		if (S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *de;
			while (d && (de = readdir(d))) {
				char p[4096];
				if (de->d_name[0] == '.')
					continue;
				snprintf(p, sizeof(p), "%s/%s", argv[i], de->d_name);
				bad += run_file(p);
				files++;
			}
			if (d)
				closedir(d);
		} else {
			bad += run_file(argv[i]);
			files++;
		}
	}
	printf("replayed %d inputs, %d unreadable\n", files, bad);
	return bad ? 1 : (files ? 0 : 77);
}
