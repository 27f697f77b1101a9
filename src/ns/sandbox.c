// SPDX-License-Identifier: GPL-2.0-or-later
/* sandbox.c — supervisor (placeholder until the core lands) */
#include "ns/sandbox.h"
#include "util/log.h"

int sandbox_run(struct aisb_plan *p)
{
	(void)p;
	log_error("sandbox not implemented yet");
	return AISB_EXIT_FAILED;
}
