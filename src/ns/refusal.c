// SPDX-License-Identifier: GPL-2.0-or-later
/* refusal.c — the one real cause when the platform refuses the sandbox (see refusal.h) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/refusal.h"
#include "ns/userns.h"
#include "util/macro.h"
#include "util/util.h"

#define CAP_SETFCAP_BIT 31

/* Each call is made with arguments the kernel refuses before it acts (EINVAL, EFAULT, EBADF):
 * a seccomp filter answers before the kernel looks (Docker's default: EPERM). */
enum probe {
	P_CLONE, P_UNSHARE, P_SETNS, P_MOUNT, P_UMOUNT2, P_PIVOT_ROOT, P_MOUNT_SETATTR, P_OPEN_TREE,
	P_MOVE_MOUNT, P_FSOPEN, P_FSCONFIG, P_FSMOUNT, P_SETHOSTNAME, P_MAX
};

/* cap_first: the kernel checks CAP_SYS_ADMIN over the mount or uts namespace before the
 * arguments (fs/namespace.c may_mount(), kernel/sys.c sethostname()): probed only inside a new
 * user+mount+uts namespace, where that check passes. optional: aisb goes on without it
 * (sethostname: the hostname stays the container's; podman's default denies it), so it is in
 * aisb's profile but never named as a cause. */
static const struct {
	const char *name;
	bool cap_first, optional;
} probes[P_MAX] = {
	[P_CLONE] = { "clone (with namespace flags)", false, false },
	[P_UNSHARE] = { "unshare", false, false },
	[P_SETNS] = { "setns", false, false },
	[P_MOUNT] = { "mount", false, false },
	[P_UMOUNT2] = { "umount2", false, false },
	[P_PIVOT_ROOT] = { "pivot_root", true, false },
	[P_MOUNT_SETATTR] = { "mount_setattr", false, false },
	[P_OPEN_TREE] = { "open_tree", false, false },
	[P_MOVE_MOUNT] = { "move_mount", true, false },
	[P_FSOPEN] = { "fsopen", true, false },
	[P_FSCONFIG] = { "fsconfig", false, false },
	[P_FSMOUNT] = { "fsmount", true, false },
	[P_SETHOSTNAME] = { "sethostname", true, true },
};

const char *refusal_syscall_name(unsigned i)
{
	return i < P_MAX ? probes[i].name : NULL;
}

/* One probe; true when a filter answered (EPERM where the kernel would say EINVAL/EFAULT/EBADF). */
static bool filtered(enum probe p)
{
	long r;

	switch (p) {
	case P_CLONE:
		return userns_clone_filtered();
	case P_UNSHARE:
		return userns_unshare_filtered();
	case P_SETNS:
		r = syscall(SYS_setns, -1, 0);
		break;
	case P_MOUNT:
		r = syscall(SYS_mount, NULL, (void *)1, NULL, 0, NULL);
		break;
	case P_UMOUNT2:
		r = syscall(SYS_umount2, "/", 0x80000000u);
		break;
	case P_PIVOT_ROOT:
		r = syscall(SYS_pivot_root, (void *)1, (void *)1);
		break;
	case P_MOUNT_SETATTR:
		r = syscall(SYS_mount_setattr, -1, NULL, 0, NULL, 0);
		break;
	case P_OPEN_TREE:
		r = syscall(SYS_open_tree, -1, NULL, 0xffffffffu);
		break;
	case P_MOVE_MOUNT:
		r = syscall(SYS_move_mount, -1, NULL, -1, NULL, 0xffffffffu);
		break;
	case P_FSOPEN:
		r = syscall(SYS_fsopen, NULL, 0xffffffffu);
		break;
	case P_FSCONFIG:
		r = syscall(SYS_fsconfig, -1, 0xffffffffu, NULL, NULL, 0);
		break;
	case P_FSMOUNT:
		r = syscall(SYS_fsmount, -1, 0xffffffffu, 0);
		break;
	case P_SETHOSTNAME:
		r = syscall(SYS_sethostname, (void *)1, 1);
		break;
	default:
		return false;
	}
	return r < 0 && errno == EPERM;
}

/* "Seccomp:" of /proc/self/status: 0 none, 1 strict, 2 filter; -1 unknown. */
static int seccomp_mode(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	int m = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &m) == 1)
			break;
	return m;
}

/* The child: clone and unshare first; then, in a new user+mount+uts namespace when one can
 * be made, every other probe, else only those the kernel answers before a capability check
 * (the rest stay unknown: not reported). Writes the mask. */
static _Noreturn void probe_child(int fd)
{
	unsigned mask = 0;
	bool inside;

	for (unsigned i = P_CLONE; i <= P_UNSHARE; i++)
		if (filtered((enum probe)i))
			mask |= 1u << i;
	inside = userns_unshare(CLONE_NEWNS | CLONE_NEWUTS) == 0;
	for (unsigned i = P_UNSHARE + 1; i < P_MAX; i++)
		if ((inside || !probes[i].cap_first) && filtered((enum probe)i))
			mask |= 1u << i;
	if (write(fd, &mask, sizeof(mask)) != (ssize_t)sizeof(mask))
		_exit(1);
	_exit(0);
}

unsigned refusal_denied_syscalls(void)
{
	unsigned mask = 0;
	int pfd[2], st;
	pid_t pid;

	if (seccomp_mode() != 2)
		return 0;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return 0;
	/* a child: a profile may kill instead of answering, and the namespaces must not stay */
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		probe_child(pfd[1]);
	}
	close(pfd[1]);
	if (pid > 0) {
		if (read(pfd[0], &mask, sizeof(mask)) != (ssize_t)sizeof(mask))
			mask = 0;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	close(pfd[0]);
	return mask;
}

bool refusal_lacks_setfcap(void)
{
	_cleanup_fclose_ FILE *f = NULL;
	char line[256];
	uint64_t eff;

	if (getuid() != 0)
		return false;
	f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %" SCNx64, &eff) == 1)
			return !(eff & (UINT64_C(1) << CAP_SETFCAP_BIT));
	return false;
}

#define PROFILE_HINT "aisb's profile, Docker's default plus exactly the calls aisb needs: " \
		     AISB_PKGDATADIR "/seccomp/aisb.json, or contrib/seccomp/aisb.json in the source"

bool refusal_explain(enum container_engine e, char *msg, size_t msglen, char *fix, size_t fixlen)
{
	unsigned mask = refusal_denied_syscalls();

	for (unsigned i = 0; i < P_MAX; i++)
		if (probes[i].optional)
			mask &= ~(1u << i);
	if (mask) {
		size_t k = (size_t)snprintf(msg, msglen, "the seccomp profile of %s denies system calls the "
					    "sandbox needs:", e == CONTAINER_NONE ? "this process" : "the container");
		for (unsigned i = 0, first = 1; i < P_MAX && k < msglen; i++)
			if (mask & (1u << i)) {
				k += (size_t)snprintf(msg + k, msglen - k, "%s %s", first ? "" : ",", probes[i].name);
				first = 0;
			}
		if (e == CONTAINER_KUBERNETES)
			snprintf(fix, fixlen, "set securityContext.seccompProfile to type: Localhost with " PROFILE_HINT
				 " (copied into the kubelet's seccomp directory), or type: Unconfined");
		else
			snprintf(fix, fixlen, "run the container with --security-opt seccomp=FILE, FILE being "
				 PROFILE_HINT " (see docs/ci.md), or --security-opt seccomp=unconfined");
		return true;
	}
	if (refusal_lacks_setfcap()) {
		snprintf(msg, msglen, "uid 0 lacks CAP_SETFCAP here%s, and Linux >= 5.12 refuses to map uid 0 into "
			 "a user namespace without it", e == CONTAINER_NONE ? "" : " (the container dropped it: --cap-drop=ALL)");
		if (e == CONTAINER_KUBERNETES)
			snprintf(fix, fixlen, "add SETFCAP to securityContext.capabilities.add, or set runAsUser to a "
				 "non-root uid");
		else
			snprintf(fix, fixlen, "give the container CAP_SETFCAP back (--cap-add=SETFCAP after "
				 "--cap-drop=ALL), or run aisb as a non-root user (--user 1000)");
		return true;
	}
	return false;
}

static long long read_sysctl(const char *proc, const char *rel)
{
	char path[512], buf[64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/sys/%s", proc, rel);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

bool refusal_userns_off(const char *proc, unsigned uid, int err, char *msg, size_t msglen, char *fix, size_t fixlen)
{
	long long max = read_sysctl(proc, "user/max_user_namespaces");

	if (max == 0 || (err == ENOSPC && max > 0)) {
		snprintf(msg, msglen, max == 0 ? "user namespaces are off: user.max_user_namespaces=0"
			 : "the user namespace limit is exhausted (user.max_user_namespaces=%lld)", max);
		snprintf(fix, fixlen, "sudo sysctl -w user.max_user_namespaces=15000 (persist it in "
			 "/etc/sysctl.d/90-aisb.conf; inside a container, the host's value or the engine's)");
		return true;
	}
	if (uid != 0 && read_sysctl(proc, "kernel/unprivileged_userns_clone") == 0) {
		snprintf(msg, msglen, "kernel.unprivileged_userns_clone=0: unprivileged user namespaces are disabled");
		snprintf(fix, fixlen, "sudo sysctl -w kernel.unprivileged_userns_clone=1 (persist it in "
			 "/etc/sysctl.d/90-aisb.conf)");
		return true;
	}
	if (uid != 0 && read_sysctl(proc, "kernel/apparmor_restrict_unprivileged_userns") == 1) {
		snprintf(msg, msglen, "kernel.apparmor_restrict_unprivileged_userns=1: AppArmor forbids unprivileged "
			 "user namespaces to programs without a profile");
		snprintf(fix, fixlen, "load aisb's AppArmor profile: sudo install -m 0644 " AISB_PKGDATADIR
			 "/apparmor/aisb /etc/apparmor.d/aisb && sudo apparmor_parser -r /etc/apparmor.d/aisb "
			 "(its path must name this aisb; run 'aisb doctor')");
		return true;
	}
	return false;
}
