// SPDX-License-Identifier: GPL-2.0-or-later
/* dl-cap.c — libcap through dlopen(), on first use (like dl-archive.c)
 *
 * Only the observers use it: `aisb inspect` of a live session and `aisb doctor --deep` read the
 * workload's capability sets back from outside the sandbox (cli/capview.h), an independent check
 * of what ns/caps.c dropped with raw capset/prctl. Nothing on `aisb run`'s path loads it, so it
 * costs a run nothing. When it is missing, every function returns libcap's own failure value.
 */
#include <sys/capability.h>

#include "util/dl.h"

#define CAP_FUNCTIONS(F, V)                                                                        \
	F(cap_t, cap_get_pid, (pid_t pid), (pid), NULL)                                            \
	F(char *, cap_to_text, (cap_t c, ssize_t *len), (c, len), NULL)                            \
	F(int, cap_free, (void *p), (p), -1)                                                       \
	F(cap_iab_t, cap_iab_get_pid, (pid_t pid), (pid), NULL)                                    \
	F(cap_flag_value_t, cap_iab_get_vector, (cap_iab_t iab, cap_iab_vector_t v, cap_value_t c),\
	  (iab, v, c), CAP_CLEAR)                                                                  \
	F(cap_value_t, cap_max_bits, (void), (), 0)                                                \
	F(char *, cap_to_name, (cap_value_t c), (c), NULL)

DL_DEFINE_STUBS(CAP_FUNCTIONS, dl_libcap, "libcap.so.2", "libcap2",
		"to read back a sandbox's capability sets (inspect, doctor --deep)", true, "capabilities",
		"recommended")
