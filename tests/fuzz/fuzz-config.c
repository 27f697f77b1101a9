// SPDX-License-Identifier: GPL-2.0-or-later
/* fuzz-config.c — the config file parser and the --mount spec parser
 * also: mountspec
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/resolve.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aisb_settings s;
	char *text = malloc(size + 1);
	char *src = NULL, *dst = NULL;
	bool ro;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	log_set_quiet(true);
	if (args_defaults(&s) == 0) {
		(void)args_apply_config(&s, text, "fuzz");
		settings_free(&s);
	}
	if (plan_parse_mount_spec(text, &src, &dst, &ro) == 0) {
		free(src);
		free(dst);
	}
	free(text);
	return 0;
}
