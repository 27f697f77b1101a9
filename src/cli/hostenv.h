/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hostenv.h — the CLI's name for util/hostenv.h (the one place aisb reads its own environment).
 *
 * The reader lives below the CLI since net/pasta.c needs it; the CLI's files keep their include.
 * Below the CLI include "util/hostenv.h" (tests/lint/layers.sh).
 */
#ifndef AISB_CLI_HOSTENV_H
#define AISB_CLI_HOSTENV_H

#include "util/hostenv.h"

#endif
