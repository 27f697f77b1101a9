// SPDX-License-Identifier: GPL-2.0-or-later
/* cmd-inspect.c — `aisb inspect ID|REF [--json]`: a session first, else an image.
 *
 * Images are issue 4's: until its `image_inspect` lands, the hook below is a weak symbol. NOTE for
 * the merge: a weak undefined reference does not pull an object out of libaisb.a, so when the
 * image code is merged, replace the hook with a direct call to its function.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/sessions.h"
#include "util/log.h"

/* Inspects image @ref (issue 4). Return: an exit code; -ENOENT when there is no such image. */
int cli_inspect_image_hook(const char *ref, bool json) __attribute__((weak));

int cmd_inspect(int argc, char **argv)
{
	const char *ref = NULL;
	bool json = false;
	int r;

	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--json"))
			json = true;
		else if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
			printf("usage: aisb inspect ID|REF [--json]\n"
			       "Shows a session (plan without secret values, limits, state) or an image.\n");
			return 0;
		} else if (!ref)
			ref = argv[i];
		else
			return log_error("inspect: unexpected argument '%s'", argv[i]), AISB_EXIT_USAGE;
	}
	if (!ref)
		return log_error("inspect: which session or image? usage: aisb inspect ID|REF [--json]"), AISB_EXIT_USAGE;
	r = session_inspect(ref, json);
	if (r == 0)
		return 0;
	if (r != -ENOENT)
		return AISB_EXIT_FAILED;
	if (cli_inspect_image_hook) {
		r = cli_inspect_image_hook(ref, json);
		if (r != -ENOENT)
			return r;
	}
	return log_error("no session or image '%s' (see 'aisb ps -a' and 'aisb images')", ref), 1;
}
