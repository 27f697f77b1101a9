/* SPDX-License-Identifier: GPL-2.0-or-later */
/* container.h — which container engine aisb runs inside, and what to ask of it.
 *
 * When a platform refuses something aisb needs (a fresh /proc, a user namespace, /dev/net/tun, a
 * delegated cgroup), the fix is an option of the engine that started the container, not of the
 * machine aisb sees. Doctor and the run print the same text from here, so they cannot disagree.
 * Detection reads the marker files the engines leave (podman: /run/.containerenv, Docker:
 * /.dockerenv, Kubernetes: the service-account mount), believed only where the mount table looks
 * like a container's (/dev not devtmpfs, or /proc masked). Without a marker, in such a mount
 * table, the root overlay's layer paths or the own cgroup name the engine, and a PID 1 that is
 * no init says "a container" (CONTAINER_UNKNOWN); an unknown engine gets every engine's option.
 */
#ifndef AISB_UTIL_CONTAINER_H
#define AISB_UTIL_CONTAINER_H

#include <stddef.h>

enum container_engine {
	CONTAINER_NONE,       /* no marker: a host, or an engine that leaves none */
	CONTAINER_PODMAN,
	CONTAINER_DOCKER,
	CONTAINER_KUBERNETES,
	CONTAINER_UNKNOWN,    /* a container without the engine's name: every engine's option */
	CONTAINER_ENGINE_MAX
};

enum container_need {
	CONTAINER_NEED_PROC,   /* an unmasked /proc, so a fresh proc can be mounted */
	CONTAINER_NEED_USERNS, /* a seccomp profile that allows CLONE_NEWUSER */
	CONTAINER_NEED_TUN,    /* /dev/net/tun, for pasta */
	CONTAINER_NEED_CGROUP, /* a delegated, writable cgroup v2 */
	CONTAINER_NEED_MAX
};

/* What --container-proc exposes, measured (docs/threat-model.md): the words of the proc
 * refusal's second advice, --print-policy, and the run's start and exit lines. */
#define CONTAINER_PROC_EXPOSURE "every process of the container is visible to the sandbox with " \
	"its argv (cmdline), status and mountinfo; the kernel still refuses their environ, memory, " \
	"maps and fd targets (another user namespace); where the container's /proc/sys is read-only " \
	"(podman's and Docker's default), nested user namespaces are refused by seccomp alone " \
	"(user.max_user_namespaces=0 cannot be set there)"

#define CONTAINER_PROC_EXPOSURE_SHORT "the sandbox then sees the container's processes and their " \
	"argv (never their environ, memory or fds), and nested user namespaces are refused by seccomp " \
	"alone"

/* The engine whose marker files exist below @root ("" or NULL: the real /), with
 * @root/proc/self/mountinfo looking like a container's. Does not log. */
enum container_engine container_detect(const char *root);

/* "podman", "Docker", "Kubernetes", or NULL for CONTAINER_NONE. Does not log. */
const char *container_engine_name(enum container_engine e);

/* The exact option to ask of @e for @need, as one phrase that starts with a verb (a static
 * string). For CONTAINER_NONE it names every engine's option. Does not log. */
const char *container_fix(enum container_engine e, enum container_need need);

/* Counts the mounts strictly below @proc_mnt in mountinfo @text (masked /proc paths, as
 * container engines leave them), not counting binfmt_misc. Does not log. */
unsigned container_proc_overmounts(const char *mountinfo, const char *proc_mnt);

/* What a failed fresh /proc mount means: "a fresh /proc cannot be mounted: <strerror(@err)>
 * (...)", naming the masks when @overmounts > 0, into @msg; the fix (container_fix() for
 * CONTAINER_NEED_PROC) into @fix. The run's refusal prints "<msg>; fix: <fix>", doctor's proc
 * check the same two parts on its two lines. Does not log. */
void container_proc_refusal(enum container_engine e, int err, unsigned overmounts, char *msg, size_t msglen,
			    char *fix, size_t fixlen);

#endif
