// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-gitguard.c — gitguard's parsers of what a sandbox wrote into a repository: git config
 * text (every key with its section, subsection and value, and the first command-valued key),
 * gitfiles and commondir files, and the lexical resolution of the path they name
 *
 * The config parser gets a buffer of exactly the input's size (it takes a length and must not
 * read past it). Whatever it reports must be what git would call a key: a lower-cased section
 * and name of key characters. gitguard_config_first_command() must agree with a scan of the
 * same keys through gitguard_key_is_command(): a key the scan finds is found. A resolved path
 * never climbs out of the root.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "git/gitguard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct scan {
	bool command;
	size_t keys;
};

static bool is_lower_key(const char *s, bool dots)
{
	if (!dots && !*s)
		return false;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '-' || (dots && *s == '.')))
			return false;
	return true;
}

static int key_fn(const char *section, const char *subsection, const char *name, const char *value,
		  void *userdata)
{
	struct scan *s = userdata;

	(void)value;
	/* a section may hold dots (the extended form keeps them) or be empty ("[.sub]", as git
	 * reads it); a name is never empty */
	if (!is_lower_key(section, true) || !is_lower_key(name, false))
		abort();
	if (gitguard_key_is_command(section, subsection, name))
		s->command = true;
	s->keys++;
	return 0;
}

static void check_path(const char *path)
{
	char *out = NULL;

	if (gitguard_path_below("/home/u/p", "sub/dir", path, &out) == 0) {
		if (!out || out[0] == '/' || strcmp(out, "..") == 0 || strncmp(out, "../", 3) == 0 ||
		    strstr(out, "/../") || (strlen(out) >= 3 && strcmp(out + strlen(out) - 3, "/..") == 0))
			abort(); /* a path that leaves the root */
		(void)gitguard_pointer_is_standard("sub/.git", out, false);
		(void)gitguard_pointer_is_standard(".git/worktrees/w/commondir", out, true);
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scan s = { false, 0 };
	char key[256], *buf, *path = NULL;
	int r, first;

	if (size > (1u << 20))
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	r = gitguard_config_parse(buf, size, key_fn, &s);
	first = gitguard_config_first_command(buf, size, key, sizeof(key));
	if ((first == 1) != s.command || (first == 0 && r < 0) || (first < 0 && r == 0))
		abort(); /* the two readings of the same text disagree */
	if (first == 1 && !key[0])
		abort();
	if (gitguard_parse_gitfile(buf, size, "gitdir:", &path) == 0) {
		check_path(path);
		free(path);
	}
	if (gitguard_parse_gitfile(buf, size, NULL, &path) == 0) {
		check_path(path);
		free(path);
	}
	free(buf);
	return 0;
}
