// SPDX-License-Identifier: GPL-2.0-or-later
/* container.c — which container engine aisb runs inside, and what to ask of it */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "util/container.h"
#include "util/macro.h"

static bool exists_under(const char *root, const char *rel)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", root ? root : "", rel);
	return lstat(path, &st) == 0;
}

/* Whether the mount namespace looks like a container's: /dev not the kernel's devtmpfs (every
 * engine mounts a tmpfs there), or /proc masked. A marker file alone is not enough: it survives
 * in root filesystems exported from containers (measured: this project's CI VM, a Firecracker
 * guest booted from such an image, has /.dockerenv with devtmpfs on /dev). */
static bool looks_contained(const char *root)
{
	char path[4096], line[1024], mp[512], type[64];
	bool dev_devtmpfs = false;
	unsigned masks = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root ? root : "");
	f = fopen(path, "re");
	if (!f)
		return true; /* no way to tell: trust the marker */
	while (fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");
		if (sscanf(line, "%*s %*s %*s %*s %511s", mp) != 1 || !sep || sscanf(sep + 3, "%63s", type) != 1)
			continue;
		if (strcmp(mp, "/dev") == 0)
			dev_devtmpfs = strcmp(type, "devtmpfs") == 0;
		else if (strncmp(mp, "/proc/", 6) == 0 && strncmp(mp, "/proc/sys/fs/binfmt_misc", 24) != 0)
			masks++;
	}
	fclose(f);
	return !dev_devtmpfs || masks > 0;
}

/* The engine named by @text: the paths of its storage or cgroups (podman: containers/storage,
 * libpod; Docker: docker; Kubernetes: kubepods, kubelet), CONTAINER_NONE when none is. */
static enum container_engine named_in(const char *text)
{
	if (strstr(text, "kubepods") || strstr(text, "/kubelet/"))
		return CONTAINER_KUBERNETES;
	if (strstr(text, "containers/storage") || strstr(text, "libpod"))
		return CONTAINER_PODMAN;
	if (strstr(text, "docker"))
		return CONTAINER_DOCKER;
	return CONTAINER_NONE;
}

/* Reads at most @n - 1 bytes of @root@rel into @buf ("" when unreadable). */
static void read_small(const char *root, const char *rel, char *buf, size_t n)
{
	char path[4096];
	size_t k = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root ? root : "", rel);
	buf[0] = 0;
	f = fopen(path, "re");
	if (!f)
		return;
	k = fread(buf, 1, n - 1, f);
	buf[k] = 0;
	fclose(f);
}

/* No marker file (podman --read-only leaves no /run/.containerenv, measured; other engines
 * leave none at all), in a mount namespace that looks contained: the root mount's overlay
 * layers or the own cgroup name the engine; else PID 1 that is not an init (a shell, the job's
 * command) says "a container" without the engine. A host whose PID 1 is no init (this
 * project's CI VM: process_api) is not taken for one: it has devtmpfs on /dev and no masks. */
static enum container_engine hinted(const char *root)
{
	char buf[8192], line[4096];
	enum container_engine e;
	FILE *f;

	snprintf(buf, sizeof(buf), "%s/proc/self/mountinfo", root ? root : "");
	f = fopen(buf, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char mp[64];
		if (sscanf(line, "%*s %*s %*s %*s %63s", mp) == 1 && strcmp(mp, "/") == 0 && strstr(line, " - overlay ")) {
			e = named_in(line);
			fclose(f);
			if (e != CONTAINER_NONE)
				return e;
			f = NULL;
			break;
		}
	}
	if (f)
		fclose(f);
	read_small(root, "/proc/self/cgroup", buf, sizeof(buf));
	if ((e = named_in(buf)) != CONTAINER_NONE)
		return e;
	read_small(root, "/proc/1/comm", buf, sizeof(buf));
	buf[strcspn(buf, "\n")] = 0;
	if (buf[0] && strcmp(buf, "systemd") != 0 && strcmp(buf, "init") != 0)
		return CONTAINER_UNKNOWN;
	return CONTAINER_NONE;
}

enum container_engine container_detect(const char *root)
{
	enum container_engine e = CONTAINER_NONE;

	/* Kubernetes first: CRI-O, one of its runtimes, also writes /run/.containerenv. */
	if (exists_under(root, "/var/run/secrets/kubernetes.io") || exists_under(root, "/run/secrets/kubernetes.io"))
		e = CONTAINER_KUBERNETES;
	else if (exists_under(root, "/run/.containerenv"))
		e = CONTAINER_PODMAN;
	else if (exists_under(root, "/.dockerenv"))
		e = CONTAINER_DOCKER;
	if (!looks_contained(root))
		return CONTAINER_NONE;
	return e != CONTAINER_NONE ? e : hinted(root);
}

const char *container_engine_name(enum container_engine e)
{
	static const char *const names[CONTAINER_ENGINE_MAX] = {
		[CONTAINER_PODMAN] = "podman", [CONTAINER_DOCKER] = "Docker", [CONTAINER_KUBERNETES] = "Kubernetes",
	};
	return e < CONTAINER_ENGINE_MAX ? names[e] : NULL;
}

/* One row per need, one column per engine; docs/ci.md gives the same options as recipes and
 * says which of them this project's CI tests. */
static const char *const fixes[CONTAINER_NEED_MAX][CONTAINER_ENGINE_MAX] = {
	[CONTAINER_NEED_PROC] = {
		[CONTAINER_NONE] = "run the container with its /proc unmasked: podman --security-opt unmask=ALL, "
				   "docker --security-opt systempaths=unconfined, Kubernetes securityContext.procMount: "
				   "Unmasked (with hostUsers: false)",
		[CONTAINER_PODMAN] = "run the container with --security-opt unmask=ALL (podman)",
		[CONTAINER_DOCKER] = "run the container with --security-opt systempaths=unconfined (docker)",
		[CONTAINER_KUBERNETES] = "set securityContext.procMount: Unmasked on the container, with "
					 "hostUsers: false in the pod spec (Kubernetes requires both)",
	},
	[CONTAINER_NEED_USERNS] = {
		[CONTAINER_NONE] = "run the container with a seccomp profile that allows unshare/clone with "
				   "CLONE_NEWUSER (podman's default does; docker: --security-opt seccomp=PROFILE.json "
				   "or seccomp=unconfined; Kubernetes: seccompProfile type Localhost or Unconfined)",
		[CONTAINER_PODMAN] = "run the container with podman's default seccomp profile (it allows "
				     "CLONE_NEWUSER) or --security-opt seccomp=PROFILE.json that allows it",
		[CONTAINER_DOCKER] = "run the container with --security-opt seccomp=PROFILE.json (Docker's "
				     "default plus unshare/clone with CLONE_NEWUSER, see docs/ci.md) or "
				     "--security-opt seccomp=unconfined",
		[CONTAINER_KUBERNETES] = "set securityContext.seccompProfile to type: Localhost with a profile "
					 "that allows CLONE_NEWUSER (see docs/ci.md), or type: Unconfined",
	},
	[CONTAINER_NEED_TUN] = {
		[CONTAINER_NONE] = "give the container /dev/net/tun (podman/docker: --device /dev/net/tun), or "
				   "use --net none or --net allow, which do not need it",
		[CONTAINER_PODMAN] = "run the container with --device /dev/net/tun (podman), or use --net none "
				     "or --net allow, which do not need it",
		[CONTAINER_DOCKER] = "run the container with --device /dev/net/tun (docker), or use --net none "
				     "or --net allow, which do not need it",
		[CONTAINER_KUBERNETES] = "Kubernetes has no pod field for /dev/net/tun: expose it with a device "
					 "plugin, or use --net none or --net allow, which do not need it",
	},
	[CONTAINER_NEED_CGROUP] = {
		[CONTAINER_NONE] = "on a cgroup v2 host, give the container a cgroup namespace with a writable, "
				   "delegated cgroup (podman: --cgroupns=private --cgroups=split; docker: "
				   "--cgroupns=private and a writable /sys/fs/cgroup)",
		[CONTAINER_PODMAN] = "ask for a delegated cgroup: on a cgroup v2 host run the container with "
				     "--cgroupns=private --cgroups=split (podman), so that its own subtree is "
				     "writable with memory, pids and cpu enabled",
		[CONTAINER_DOCKER] = "ask for a delegated cgroup: on a cgroup v2 host run the container with "
				     "--cgroupns=private and a writable /sys/fs/cgroup (docker), with memory, pids "
				     "and cpu enabled in its cgroup.subtree_control",
		[CONTAINER_KUBERNETES] = "Kubernetes gives pods no writable cgroup yet (KEP-5474): set the "
					 "pod's resources.limits instead, which the node enforces on the whole pod",
	},
};

const char *container_fix(enum container_engine e, enum container_need need)
{
	if (need >= CONTAINER_NEED_MAX)
		return "";
	/* an engine not known by name gets every engine's option */
	if (e >= CONTAINER_ENGINE_MAX || e == CONTAINER_UNKNOWN)
		e = CONTAINER_NONE;
	return fixes[need][e];
}

unsigned container_proc_overmounts(const char *mi, const char *proc_mnt)
{
	size_t plen = strlen(proc_mnt);
	unsigned n = 0;

	for (const char *line = mi; line && *line;) {
		const char *nl = strchr(line, '\n');
		char mp[512];
		/* field 5 is the mount point */
		if (sscanf(line, "%*s %*s %*s %*s %511s", mp) == 1 && strncmp(mp, proc_mnt, plen) == 0 &&
		    mp[plen] == '/' && strncmp(mp, "/proc/sys/fs/binfmt_misc", 24) != 0)
			n++;
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

void container_proc_refusal(enum container_engine e, int err, unsigned overmounts, char *msg, size_t msglen,
			    char *fix, size_t fixlen)
{
	const char *name = container_engine_name(e);

	/* The kernel mounts a new proc in a user namespace only where an existing proc is fully
	 * visible (fs/namespace.c mnt_already_visible()): every mount an engine puts over
	 * /proc/kcore, /proc/sys, ... makes it refuse with EPERM. */
	if (overmounts)
		snprintf(msg, msglen, "a fresh /proc cannot be mounted: %s (%s masks %u path%s of /proc, and "
			 "the kernel then refuses a new proc in a user namespace)", strerror(err),
			 name ? name : "the container engine", overmounts, overmounts == 1 ? "" : "s");
	else
		snprintf(msg, msglen, "a fresh /proc cannot be mounted: %s", strerror(err));
	/* the unmask stays the first advice; the trade is offered second, with its exposure */
	snprintf(fix, fixlen, "%s; or, accepting that " CONTAINER_PROC_EXPOSURE_SHORT ", pass --container-proc",
		 container_fix(e, CONTAINER_NEED_PROC));
}
