/* SPDX-License-Identifier: GPL-2.0-or-later */
/* image-run.h — what `aisb run --image REF` adds to a resolved plan.
 *
 * The image's rootfs (pulled when absent or stale) becomes the plan's overlay lower, and its
 * config applies where it does not widen the policy: Env adds variables the plan does not set
 * (PATH replaces the sandbox default unless the user passed --env PATH; identity and proxy
 * variables are never taken from an image), WorkingDir is the cwd when there is no project
 * (--no-cwd), and Entrypoint/Cmd are the command when the user gave no `--` command and no
 * harness arguments. User is ignored: the sandbox identity is fixed (uid 1000, docs/design.md §4).
 */
#ifndef AISB_CLI_IMAGE_RUN_H
#define AISB_CLI_IMAGE_RUN_H

#include <stdbool.h>

#include "core/plan.h"
#include "rootfs/oci.h"

/* Applies @cfg to @p as described above. Pure apart from allocation. Return: 0 or -ENOMEM.
 * Does not log. */
int image_apply_config(struct aisb_plan *p, const struct aisb_settings *s, const struct oci_image_config *cfg);

/* A stage of plan_resolve() (cli/resolve.h), its only caller: makes @p->image_ref's rootfs
 * available (pulling it unless @preview or @lock_fd is NULL, when only the store is read; @get is
 * the environment the store and registry settings come from) and applies its config. *@lock_fd
 * receives a shared lock on the rootfs to hold for the session (or -1). Return: 0 or an exit
 * code (78 bad reference or policy, 125). Logs on failure. */
int image_attach(struct aisb_plan *p, const struct aisb_settings *s, env_getter get, bool preview, int *lock_fd);

#endif
