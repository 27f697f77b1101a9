/* SPDX-License-Identifier: GPL-2.0-or-later */
/* doctor.h — `aisb doctor`: one check per prerequisite, each with a status and the exact fix.
 *
 * Every check reads the host through a struct doctor_env whose /proc, /sys and /etc roots can
 * point at a fake tree, so the unit tests feed sysctl values, status lines and mountinfo without a
 * kernel. Checks that need the kernel itself (creating a user namespace, mounting proc or overlay,
 * talking nf_tables in a fresh netns) run only when env->live is set.
 */
#ifndef AISB_CLI_DOCTOR_H
#define AISB_CLI_DOCTOR_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli/args.h"
#include "util/dl.h"

enum doctor_status { DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL, DOCTOR_STATUS_MAX };

struct doctor_result {
	enum doctor_status status;
	char name[24];
	char msg[768]; /* the proc trade: the exposure and where it was chosen */
	char fix[640];
};

struct doctor_env {
	const char *proc;      /* "/proc" */
	const char *sys;       /* "/sys" */
	const char *etc;       /* "/etc" */
	const char *cgroup_root; /* "" for the real system; see cgroup.h */
	const char *root;      /* where the container engines' marker files are: "" or NULL for / */
	uid_t uid;
	const char *user;      /* login name, for subuid; may be NULL */
	const char *self_exe;  /* path of this aisb, for the AppArmor fix */
	env_getter get;
	bool live;             /* run probes that need the kernel */
	/* --container-proc chosen (the config key container_proc, AISB_CONTAINER_PROC or doctor's
	 * own --container-proc, as a run reads them): a masked /proc is then what the run binds,
	 * so the proc check reports that trade instead of the refusal. @container_proc_by names
	 * the source for the message (NULL: "the flag"). */
	bool container_proc;
	const char *container_proc_by;
	struct dl_lib *const *libs; /* NULL-terminated; NULL: the optional libraries of util/dl.h */
};

/* Each check fills @r. Does not log. */
void doctor_check_userns(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_max_userns(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_seccomp(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_proc(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_overlay(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_nft(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_pasta(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_cgroup(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_subuid(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_dirs(const struct doctor_env *e, struct doctor_result *r);
void doctor_check_libs(const struct doctor_env *e, struct doctor_result *r);

/* Runs every check and prints one line each ("ok   name: msg", "warn ...", "FAIL ...", each
 * not-ok line followed by "     fix: ..."). Return: the number of FAILs. Does not log. */
int doctor_run(const struct doctor_env *e, FILE *out);


/* Does /etc/subuid-style @text give @user or @uid a range of at least @min ids? Does not log. */
bool doctor_subid_has_range(const char *text, const char *user, uid_t uid, unsigned long min);

/* The pasta options aisb relies on that `pasta --help` text @help lacks, space separated, into
 * @buf (empty when none is missing). Does not log. */
void doctor_pasta_missing(const char *help, char *buf, size_t n);

#endif
