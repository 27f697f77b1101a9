/* SPDX-License-Identifier: GPL-2.0-or-later */
/* podman.h — the optional podman builder: run podman as a program, never as a library.
 *
 * `podman build` of the recipe aisb already checked, `podman save --format oci-archive`, and the
 * caller imports the archive into aisb's store. podman is exec'd with an argv (no shell) and the
 * caller's environment (it is the user's own tool, on the host side: nothing of it reaches a
 * sandbox). Its build output goes to aisb's stderr. On hosts without a pure cgroup v2 hierarchy
 * and with runc installed, `--runtime runc` is passed: podman's crun fails on hybrid cgroups
 * (docs/machine-facts.md), runc works on both (docs/build.md).
 */
#ifndef AISB_BUILD_PODMAN_H
#define AISB_BUILD_PODMAN_H

#include <stdbool.h>

/* Finds @name in the colon-separated @path (NULL: not found). Caller frees. Does not log. */
char *podman_find_program(const char *path, const char *name);

struct podman {
	char *exe;          /* absolute path of podman */
	bool runtime_runc;  /* pass --runtime runc */
	bool no_network;    /* pass --network=none: RUN gets loopback only (the native default) */
	const char *netns;  /* the gated netns (build/podman-netns.h): --network=ns:NETNS with the
			     * gate's resolver and proxy, as a native RUN step gets them; NULL: none */
};

/* Locates podman (and runc) along @path. Return: 0, -ENOENT when podman is not installed.
 * Does not log. */
int podman_init(struct podman *p, const char *path);
void podman_done(struct podman *p);

/* Makes @ref present in podman's storage (pulling when missing) and returns its digest
 * ("sha256:..."). Logs on failure. */
int podman_base_digest(const struct podman *p, const char *ref, char **digest);

/* podman build --pull=never -f @file -t @image [--label L]... [--build-arg A]... @context; with
 * a gated netns also --network=ns:PATH --dns=GATE_DNS_ADDR --http-proxy=false and the gate's
 * proxy variables as build args (podman's predefined proxy ARGs: in RUN's environment, not in
 * the image's config or history; measured, podman 4.3.1), the caller's own proxy variables not
 * passed on.
 * Return: 0, or -ECHILD when podman failed (its exit code in *status). Logs on failure. */
int podman_build(const struct podman *p, const char *file, const char *context, const char *image,
		 char *const *build_args, char *const *labels, int *status);

/* podman save --format oci-archive -o @archive @image. Logs on failure. */
int podman_save(const struct podman *p, const char *image, const char *archive);

#endif
