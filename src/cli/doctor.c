// SPDX-License-Identifier: GPL-2.0-or-later
/* doctor.c — prerequisite checks with fixes, readable from fake /proc, /sys and /etc trees */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include "cli/doctor.h"
#include "cli/sessions.h"
#include "net/gate.h"
#include "net/nft.h"
#include "net/pasta.h"
#include "ns/cgroup.h"
#include "ns/limits.h"
#include "ns/mounts.h"
#include "ns/refusal.h"
#include "ns/userns.h"
#include "util/container.h"
#include "util/homedir.h"
#include "util/spawn.h"
#include "util/strbuf.h"
#include "util/util.h"

#define SMALL_MAX ((size_t)256 * 1024)

/* Copies with truncation (messages are bounded on purpose). */
static void copy_trunc(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
}

static void set(struct doctor_result *r, enum doctor_status st, const char *name, const char *msg,
		const char *fix)
{
	r->status = st;
	copy_trunc(r->name, sizeof(r->name), name);
	copy_trunc(r->msg, sizeof(r->msg), msg);
	copy_trunc(r->fix, sizeof(r->fix), fix ? fix : "");
}

/* Reads a file below @root; NULL when absent. */
static char *read_under(const char *root, const char *rel)
{
	_cleanup_free_ char *p = path_join(root, rel);
	char *text = NULL;
	if (!p || read_file_at(AT_FDCWD, p, SMALL_MAX, &text, NULL) < 0)
		return NULL;
	return text;
}

/* A sysctl as a number, or -1 when absent/unreadable. */
static long long read_sysctl(const struct doctor_env *e, const char *rel)
{
	_cleanup_free_ char *t = read_under(e->proc, rel);
	unsigned long long v;
	if (!t)
		return -1;
	t[strcspn(t, "\n ")] = 0;
	return parse_u64(t, &v) == 0 ? (long long)v : -1;
}

/* ---- live probes: a child that tries, and reports errno as its exit status ---------------- */

static int probe_userns(void)
{
	return userns_try();
}

/* The probes' namespaces are made by the one userns module (ns/userns.c), as the sandbox's are. */
static int enter(int flags)
{
	const struct userns_map m = userns_map_root();
	int r = userns_enter(&m, flags, NULL);

	if (r < 0)
		return r;
	if ((flags & CLONE_NEWNS) && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	return 0;
}

static int probe_proc(void)
{
	pid_t pid;
	int st, r = enter(CLONE_NEWNS | CLONE_NEWPID);
	if (r < 0)
		return r;
	pid = fork(); /* PID 1 of the new pid namespace */
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? errno : 0);
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? -WEXITSTATUS(st) : -EINTR;
}

/* --container-proc's trade, as init makes it (ns/mounts.h): the container's /proc, cloned with
 * its masks, attached in a new user+mount namespace, and a file of it readable. */
static int probe_container_proc(void)
{
	_cleanup_close_ int tree = -1;
	int r = enter(CLONE_NEWNS);

	if (r < 0)
		return r;
	if (mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") < 0 || mkdir("/tmp/proc", 0755) < 0)
		return -errno;
	tree = mount_container_proc_detached();
	if (tree < 0)
		return tree;
	if (move_mount(tree, "", AT_FDCWD, "/tmp/proc", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return access("/tmp/proc/self/status", R_OK) < 0 ? -errno : 0;
}

/* Where probe_overlay() works: "" for a tmpfs of its own, else a directory on the filesystem
 * that holds the run's overlay upper (the state dir: sessions/<id>/overlay). */
static char overlay_base[1024];

static int probe_overlay(void)
{
	char l[1040], d[1050], u[1040], w[1040], m[1040];
	const char *b = overlay_base;
	int r = enter(CLONE_NEWNS);
	if (r < 0)
		return r;
	if (!*b) {
		if (mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") < 0)
			return -errno;
		b = "/tmp";
	}
	snprintf(l, sizeof(l), "%s/l", b);
	snprintf(d, sizeof(d), "%s/l/d", b);
	snprintf(u, sizeof(u), "%s/u", b);
	snprintf(w, sizeof(w), "%s/w", b);
	snprintf(m, sizeof(m), "%s/m", b);
	if (mkdir(l, 0755) < 0 || mkdir(d, 0755) < 0 || mkdir(u, 0755) < 0 || mkdir(w, 0755) < 0 ||
	    mkdir(m, 0755) < 0)
		return -errno;
	{
		char opts[3200];
		snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", l, u, w);
		if (mount("overlay", m, "overlay", 0, opts) < 0)
			return -errno;
	}
	/* The measured failure without userxattr: removing a lower dir gives EIO. */
	snprintf(d, sizeof(d), "%s/d", m);
	if (rmdir(d) < 0)
		return -errno;
	return 0;
}

static int probe_nft(void)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;
	struct timeval tv = { 3, 0 };
	unsigned portid;
	int r = enter(CLONE_NEWNET), k;

	if (r < 0)
		return r;
	nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return -errno;
	setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	portid = mnl_socket_get_portid(nl);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETGEN;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = 1;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = 0;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		k = (int)mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (k < 0)
			return -errno;
		k = mnl_cb_run(buf, (size_t)k, 1, portid, NULL, NULL);
		if (k <= 0)
			return k < 0 ? -errno : 0;
	}
}

/* Where probe_nft_apply() reports how long the install took (µs), from the probe child. */
static int nft_time_fd = -1;

/* Installs and verifies aisb's own allow-mode ruleset (nft_apply: one batch, every ACK, the
 * read-back check) in a new user+net namespace, as init does before every allow-mode run. */
static int probe_nft_apply(void)
{
	struct allow_list l = { 0 };
	struct nft_spec spec = { .transparent_port = GATE_TRANSPARENT_PORT, .allow = &l };
	struct nft_ruleset rs;
	struct timespec a, b;
	long long us;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC), r = enter(CLONE_NEWNET);

	if (null >= 0)
		dup2(null, 2); /* nft_apply() logs; the doctor line says it instead */
	if (r < 0)
		return r;
	if ((r = allow_list_add(&l, "example.com")) < 0 || (r = nft_ruleset_build(&spec, &rs)) < 0)
		return r;
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = nft_apply(&rs);
	clock_gettime(CLOCK_MONOTONIC, &b);
	us = (b.tv_sec - a.tv_sec) * 1000000LL + (b.tv_nsec - a.tv_nsec) / 1000;
	if (r == 0 && nft_time_fd >= 0)
		(void)!write(nft_time_fd, &us, sizeof(us));
	return r;
}

/* Runs @fn in a child (it may unshare freely). Return: 0 or -errno of the probe. */
static int probe(int (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int r;
		alarm(10); /* a probe never hangs doctor */
		r = fn();
		_exit(r < 0 ? (-r > 255 ? 255 : -r) : 0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(st))
		return -WEXITSTATUS(st);
	return -ETIMEDOUT;
}

/* The namespace probes below need a user namespace first; without one they would only repeat
 * the userns check's failure under another name. */
/* The platform's refusal of the sandbox (ns/refusal.h: a seccomp profile denying its calls,
 * root without CAP_SETFCAP), once per doctor run: the userns check reports it, word for word
 * the run's refusal, and the probes below are then not checked (they would fail on the same
 * cause and blame /proc, overlay or nft). */
static bool platform_refuses(const struct doctor_env *e, char *msg, size_t msglen, char *fix, size_t fixlen)
{
	static int known = -1;
	static char m[512], f[512];

	if (!e->live)
		return false;
	if (known < 0)
		known = refusal_explain(container_detect(e->root), m, sizeof(m), f, sizeof(f));
	if (known && msg) {
		snprintf(msg, msglen, "%s", m);
		snprintf(fix, fixlen, "%s", f);
	}
	return known;
}

static bool needs_userns(const struct doctor_env *e, struct doctor_result *r, const char *name)
{
	if (!e->live || (probe(probe_userns) == 0 && !platform_refuses(e, NULL, 0, NULL, 0)))
		return false;
	set(r, DOCTOR_WARN, name, "not checked: it needs a user namespace (see 'userns')", NULL);
	return true;
}

/* ---- checks ------------------------------------------------------------------------------ */

void doctor_check_userns(const struct doctor_env *e, struct doctor_result *r)
{
	long long apparmor = read_sysctl(e, "sys/kernel/apparmor_restrict_unprivileged_userns");
	long long clone = read_sysctl(e, "sys/kernel/unprivileged_userns_clone");
	char msg[512], fix[640];
	int k;

	if (platform_refuses(e, msg, sizeof(msg), fix, sizeof(fix))) {
		set(r, DOCTOR_FAIL, "userns", msg, fix);
		return;
	}
	if (e->uid != 0 && apparmor == 1) {
		/* make install and the .deb always put a copy in PKGDATADIR; /etc/apparmor.d gets it
		 * only where AppArmor reads abi 4.0 (configure.ac, issue 24) */
		snprintf(fix, sizeof(fix),
			 "install the AppArmor profile shipped in %s (its path must name '%s'): "
			 "sudo install -m 0644 %s /etc/apparmor.d/aisb && sudo apparmor_parser "
			 "-r /etc/apparmor.d/aisb   (or, system-wide and weaker: sudo sysctl -w "
			 "kernel.apparmor_restrict_unprivileged_userns=0)", AISB_PKGDATADIR "/apparmor/aisb (or the "
			 "source tree's contrib/apparmor/aisb)", e->self_exe ? e->self_exe : "aisb",
			 AISB_PKGDATADIR "/apparmor/aisb");
		if (e->live && probe(probe_userns) == 0) {
			set(r, DOCTOR_OK, "userns", "unprivileged user namespaces work (an AppArmor profile "
			    "allows aisb despite kernel.apparmor_restrict_unprivileged_userns=1)", NULL);
			return;
		}
		set(r, DOCTOR_FAIL, "userns", "kernel.apparmor_restrict_unprivileged_userns=1: AppArmor "
		    "forbids unprivileged user namespaces to programs without a profile", fix);
		return;
	}
	if (e->uid != 0 && clone == 0 &&
	    refusal_userns_off(e->proc, (unsigned)e->uid, 0, msg, sizeof(msg), fix, sizeof(fix))) {
		set(r, DOCTOR_FAIL, "userns", msg, fix); /* the run's words (ns/refusal.h) */
		return;
	}
	if (!e->live) {
		set(r, DOCTOR_OK, "userns", "no sysctl forbids unprivileged user namespaces", NULL);
		return;
	}
	k = probe(probe_userns);
	if (k == 0) {
		set(r, DOCTOR_OK, "userns", "unprivileged user namespaces work", NULL);
		return;
	}
	/* the sysctl that turns them off, in the run's words (ns/refusal.h) */
	if (refusal_userns_off(e->proc, (unsigned)e->uid, -k, msg, sizeof(msg), fix, sizeof(fix))) {
		set(r, DOCTOR_FAIL, "userns", msg, fix);
		return;
	}
	snprintf(msg, sizeof(msg), "cannot create a user namespace: %s", strerror(-k));
	set(r, DOCTOR_FAIL, "userns", msg,
	    k == -ENOSPC ? "user.max_user_namespaces is exhausted or 0: sudo sysctl -w user.max_user_namespaces=15000"
	    : k == -EPERM ? container_fix(container_detect(e->root), CONTAINER_NEED_USERNS)
	    : "check 'dmesg' and the kernel's CONFIG_USER_NS");
}

void doctor_check_max_userns(const struct doctor_env *e, struct doctor_result *r)
{
	long long v = read_sysctl(e, "sys/user/max_user_namespaces");
	char msg[128];

	if (v < 0) {
		set(r, DOCTOR_WARN, "max_userns", "cannot read user.max_user_namespaces",
		    "mount /proc, or check that the kernel has CONFIG_USER_NS");
		return;
	}
	snprintf(msg, sizeof(msg), "user.max_user_namespaces=%lld", v);
	if (v == 0)
		set(r, DOCTOR_FAIL, "max_userns", msg, "sudo sysctl -w user.max_user_namespaces=15000 (persist "
		    "it in /etc/sysctl.d/90-aisb.conf)");
	else if (v < 16)
		set(r, DOCTOR_WARN, "max_userns", msg, "raise it: sudo sysctl -w user.max_user_namespaces=15000");
	else
		set(r, DOCTOR_OK, "max_userns", msg, NULL);
}

void doctor_check_seccomp(const struct doctor_env *e, struct doctor_result *r)
{
	_cleanup_free_ char *st = read_under(e->proc, "self/status");
	const char *p;
	long mode = -1, filters = 0;

	if (!st) {
		set(r, DOCTOR_WARN, "seccomp", "cannot read /proc/self/status", "mount /proc");
		return;
	}
	if ((p = strstr(st, "\nSeccomp:")))
		mode = strtol(p + 9, NULL, 10);
	if ((p = strstr(st, "\nSeccomp_filters:")))
		filters = strtol(p + 17, NULL, 10);
	if (mode == 2) {
		char msg[160];
		snprintf(msg, sizeof(msg), "aisb already runs under %ld inherited seccomp filter%s (a container "
			 "engine or a service manager)", filters, filters == 1 ? "" : "s");
		set(r, DOCTOR_WARN, "seccomp", msg, "if the userns check fails on it, run the container with aisb's "
		    "seccomp profile (Docker's default plus exactly the calls aisb needs): --security-opt seccomp="
		    AISB_PKGDATADIR "/seccomp/aisb.json (contrib/seccomp/aisb.json in the source; docs/ci.md)");
	} else if (mode == 1)
		set(r, DOCTOR_FAIL, "seccomp", "strict seccomp mode: nothing but read/write/exit is allowed",
		    "run aisb outside this strict-seccomp process");
	else
		set(r, DOCTOR_OK, "seccomp", "no inherited seccomp filter", NULL);
}

/* What a run does where a fresh /proc is refused and --container-proc was chosen: it binds the
 * container's /proc (a warning with the exposure, the run's own words: mount-apply.c), or, when
 * that bind fails too (@bind < 0), refuses. */
static void proc_trade(const struct doctor_env *e, struct doctor_result *r, int bind)
{
	const char *by = e->container_proc_by ? e->container_proc_by : "the flag";
	enum container_engine eng = container_detect(e->root);
	char msg[768], fix[384];

	if (bind < 0) {
		snprintf(msg, sizeof(msg), "a fresh /proc cannot be mounted here (masked), and the container's /proc "
			 "cannot be bound either (--container-proc, chosen with %s): %s", by, strerror(-bind));
		set(r, DOCTOR_FAIL, "proc", msg, container_fix(eng, CONTAINER_NEED_PROC));
		return;
	}
	snprintf(msg, sizeof(msg), "a fresh /proc cannot be mounted here (masked): runs with --container-proc "
		 "(chosen with %s) use the container's /proc: " CONTAINER_PROC_EXPOSURE, by);
	snprintf(fix, sizeof(fix), "to keep the container's processes out of the sandbox: %s",
		 container_fix(eng, CONTAINER_NEED_PROC));
	set(r, DOCTOR_WARN, "proc", msg, fix);
}

/* A masked /proc is a FAIL, not a warning: the run refuses there (77) unless --container-proc
 * was chosen (container.h). The message and fix are the run's refusal, word for word; with
 * --container-proc, the run's warning (proc_trade()). */
void doctor_check_proc(const struct doctor_env *e, struct doctor_result *r)
{
	_cleanup_free_ char *mi = read_under(e->proc, "self/mountinfo");
	unsigned over = mi ? container_proc_overmounts(mi, "/proc") : 0;
	char msg[512], fix[512];
	int k;

	if (!e->live) {
		if (over && e->container_proc)
			proc_trade(e, r, 0);
		else if (over) {
			container_proc_refusal(container_detect(e->root), EPERM, over, msg, sizeof(msg), fix, sizeof(fix));
			set(r, DOCTOR_FAIL, "proc", msg, fix);
		} else
			set(r, DOCTOR_OK, "proc", "/proc is not masked", NULL);
		return;
	}
	if (needs_userns(e, r, "proc"))
		return;
	k = probe(probe_proc);
	if (k == 0) {
		set(r, DOCTOR_OK, "proc", "a fresh /proc mounts in a new user+pid namespace", NULL);
		return;
	}
	/* the run binds the container's /proc exactly on EPERM (mount-apply.c apply_fs()) */
	if (k == -EPERM && e->container_proc) {
		proc_trade(e, r, probe(probe_container_proc));
		return;
	}
	container_proc_refusal(container_detect(e->root), -k, over, msg, sizeof(msg), fix, sizeof(fix));
	set(r, DOCTOR_FAIL, "proc", msg, fix);
}

/* probe_overlay() in a fresh directory below the state dir. Return: 0, -errno of the probe, or
 * 0 when the state dir cannot be made (doctor's dirs check says that). */
static int overlay_probe_in_state(const struct doctor_env *e)
{
	_cleanup_free_ char *state = homedir_aisb(e->get, HOMEDIR_STATE), *tmpl = NULL;
	int k;

	if (!state || mkdir_p(state, 0700) < 0 || !(tmpl = path_join(state, ".doctor-overlay-XXXXXX")) ||
	    !mkdtemp(tmpl))
		return 0;
	snprintf(overlay_base, sizeof(overlay_base), "%s", tmpl);
	k = probe(probe_overlay);
	overlay_base[0] = 0;
	(void)rm_rf(tmpl);
	return k;
}

void doctor_check_overlay(const struct doctor_env *e, struct doctor_result *r)
{
	_cleanup_free_ char *fs = read_under(e->proc, "filesystems");
	char msg[256];
	int k;

	if (fs && !strstr(fs, "\toverlay\n")) {
		set(r, DOCTOR_WARN, "overlay", "overlayfs is not loaded (and a user namespace cannot load it)",
		    "sudo modprobe overlay (persist: echo overlay | sudo tee /etc/modules-load.d/aisb.conf); "
		    "without it --image runs on a read-only bind with tmpfs for writable paths");
		return;
	}
	if (!e->live) {
		set(r, DOCTOR_OK, "overlay", "overlayfs is available", NULL);
		return;
	}
	if (needs_userns(e, r, "overlay"))
		return;
	overlay_base[0] = 0;
	k = probe(probe_overlay);
	if (k < 0) {
		snprintf(msg, sizeof(msg), "overlay with userxattr fails in a user namespace: %s", strerror(-k));
		set(r, DOCTOR_WARN, "overlay", msg, "needs Linux >= 5.11; without it --image runs on a read-only "
		    "bind with tmpfs for writable paths");
		return;
	}
	/* A kept run's upper lives in the state dir (one that is not kept has a tmpfs upper): an
	 * overlay upper on overlayfs (a container's root filesystem) is refused, measured in
	 * rootful podman, so probe there too. */
	if ((k = overlay_probe_in_state(e)) < 0) {
		_cleanup_free_ char *state = homedir_aisb(e->get, HOMEDIR_STATE);
		snprintf(msg, sizeof(msg), "overlay works on a tmpfs, but not with its upper in the state dir '%s' "
			 "(%s): --image --keep runs read-only there, with tmpfs on the writable paths",
			 state ? state : "?", strerror(-k));
		set(r, DOCTOR_WARN, "overlay", msg, "point XDG_STATE_HOME at a filesystem that can hold an "
		    "overlay upper (ext4, xfs, btrfs, tmpfs; not overlayfs), e.g. a volume in a container, or "
		    "use --ephemeral with --keep (upper on tmpfs)");
		return;
	}
	set(r, DOCTOR_OK, "overlay", "overlay with userxattr mounts in a user namespace, with its upper in the "
	    "state dir, and removing a lower directory works", NULL);
}

void doctor_check_nft(const struct doctor_env *e, struct doctor_result *r)
{
	char msg[256];
	long long us = -1;
	int k, fds[2];

	if (!e->live) {
		set(r, DOCTOR_OK, "nft", "not probed", NULL);
		return;
	}
	if (needs_userns(e, r, "nft"))
		return;
	/* the probes talk netlink through libmnl and build the ruleset with libnftnl (util/dl.h) */
	if (dl_open(&dl_libmnl) < 0) {
		set(r, DOCTOR_WARN, "nft", dl_libmnl.error, "apt-get install libmnl0");
		return;
	}
	if (dl_open(&dl_libnftnl) < 0) {
		set(r, DOCTOR_WARN, "nft", dl_libnftnl.error, "apt-get install libnftnl11");
		return;
	}
	k = probe(probe_nft);
	if (k < 0) {
		snprintf(msg, sizeof(msg), "nf_tables does not answer inside a new user+net namespace: %s",
			 strerror(-k));
		set(r, DOCTOR_FAIL, "nft", msg, "sudo modprobe nf_tables (persist: echo nf_tables | sudo tee "
		    "/etc/modules-load.d/aisb.conf); --net allow needs it, --net none does not");
		return;
	}
	if (pipe2(fds, O_CLOEXEC) == 0) {
		nft_time_fd = fds[1];
		k = probe(probe_nft_apply);
		nft_time_fd = -1;
		close(fds[1]);
		if (read(fds[0], &us, sizeof(us)) != sizeof(us))
			us = -1;
		close(fds[0]);
	} else
		k = -errno;
	if (k < 0) {
		snprintf(msg, sizeof(msg), "nf_tables answers, but aisb's ruleset (filter, nat, reject) cannot be "
			 "installed and verified in a new user+net namespace: %s", strerror(-k));
		set(r, DOCTOR_FAIL, "nft", msg, "the kernel needs nf_tables with nft_chain_nat, nft_redir, "
		    "nft_reject_inet and nf_conntrack (CONFIG_NFT_NAT, CONFIG_NFT_REDIR, CONFIG_NFT_REJECT_INET); "
		    "--net allow needs them, --net none does not");
		return;
	}
	snprintf(msg, sizeof(msg), "aisb's allow-mode ruleset installs and verifies inside a new user+net "
		 "namespace (%.1f ms)", us >= 0 ? (double)us / 1000 : 0.0);
	set(r, DOCTOR_OK, "nft", msg, NULL);
}

void doctor_pasta_missing(const char *help, char *buf, size_t n)
{
	static const char *const need[] = { "--config-net", "--no-map-gw", "--netns", "--userns",
					    "--tcp-ns", "--udp-ns", "--foreground", "--quiet" };
	size_t off = 0;

	if (n)
		buf[0] = 0;
	for (size_t i = 0; i < ELEMENTSOF(need); i++)
		if (!strstr(help, need[i])) {
			int k = snprintf(buf + off, n > off ? n - off : 0, "%s%s", off ? " " : "", need[i]);
			if (k > 0)
				off += (size_t)k;
		}
}

/* Finds @name on PATH. Caller frees. */
static char *which(const struct doctor_env *e, const char *name)
{
	const char *path = e->get("PATH");
	for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; p && *p;) {
		size_t len = strcspn(p, ":");
		char *c = NULL;
		if (len && asprintf(&c, "%.*s/%s", (int)len, p, name) >= 0 && access(c, X_OK) == 0)
			return c;
		free(c);
		p += len;
		if (*p == ':')
			p++;
	}
	return NULL;
}

/* Runs `@exe @arg` and returns its output (bounded, 5 s). */
static char *run_text(const char *exe, const char *arg)
{
	char *argv[] = { (char *)exe, (char *)arg, NULL };
	int fds[2], r;
	pid_t pid;
	char *buf;
	size_t len = 0, cap = (size_t)128 * 1024;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return NULL;
	fflush(NULL);
	const struct spawn_fd map[] = { { SPAWN_DEVNULL, 0 }, { fds[1], 1 }, { fds[1], 2 } };
	const struct spawn_opts o = { .argv = argv, .fds = map, .n_fds = ELEMENTSOF(map), .alarm_s = 5 };

	r = spawn(&o, &pid);
	close(fds[1]);
	if (r < 0) {
		close(fds[0]);
		return NULL;
	}
	buf = malloc(cap + 1);
	if (buf) {
		ssize_t k;
		while (len < cap && (k = read(fds[0], buf + len, cap - len)) != 0) {
			if (k < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			len += (size_t)k;
		}
		buf[len] = 0;
	}
	close(fds[0]);
	kill(pid, SIGKILL);
	(void)spawn_wait(pid);
	return buf;
}

/* pasta opens /dev/net/tun in its own mount namespace, the caller's (a container without the
 * device gets "Failed to open tun socket", measured). Sets errno when false. */
static bool tun_usable(const struct doctor_env *e)
{
	_cleanup_free_ char *p = path_join(e->root && *e->root ? e->root : "/", "dev/net/tun");
	int fd = p ? open(p, O_RDWR | O_CLOEXEC) : -1;

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

void doctor_check_pasta(const struct doctor_env *e, struct doctor_result *r)
{
	_cleanup_free_ char *exe = which(e, "pasta"), *help = NULL, *version = NULL;
	char missing[256], msg[512], ver[64] = "";
	struct pasta_opts o;

	if (!exe) {
		set(r, DOCTOR_WARN, "pasta", "pasta is not installed: --net full and --publish are unavailable "
		    "(--net none and allow work without it)", "sudo apt-get install passt (Debian/Ubuntu), "
		    "sudo dnf install passt (Fedora)");
		return;
	}
	help = run_text(exe, "--help");
	if (!help || !*help) {
		snprintf(msg, sizeof(msg), "'%s --help' printed nothing", exe);
		set(r, DOCTOR_WARN, "pasta", msg, "reinstall passt");
		return;
	}
	doctor_pasta_missing(help, missing, sizeof(missing));
	if (*missing) {
		snprintf(msg, sizeof(msg), "%s lacks options aisb uses: %s", exe, missing);
		set(r, DOCTOR_WARN, "pasta", msg, "install a newer passt (2023 or later)");
		return;
	}
	if (!tun_usable(e)) {
		snprintf(msg, sizeof(msg), "/dev/net/tun cannot be opened (%s): pasta cannot work here, so "
			 "--net full, --publish and IP/CIDR allow entries fail (--net none and --net allow "
			 "with names do not need it)", strerror(errno));
		set(r, DOCTOR_WARN, "pasta", msg, container_fix(container_detect(e->root), CONTAINER_NEED_TUN));
		return;
	}
	version = run_text(exe, "--version");
	if (pasta_parse_help(help, &o) < 0)
		memset(&o, 0, sizeof(o));
	/* The first line that is not syslog noise ("Failed to send N bytes to syslog", measured). */
	for (char *line = version, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (*line && !strstr(line, "syslog")) {
			copy_trunc(ver, sizeof(ver), line);
			break;
		}
	}
	snprintf(msg, sizeof(msg), "%s (version: %s) has every option aisb uses; detected: --runas %s, "
		 "--ipv4-only %s, --dns-forward %s (--net full's name resolution), --map-host-loopback %s "
		 "(without it the gateway maps to the host's loopback unless --no-map-gw, which aisb always "
		 "passes)", exe, ver[0] ? ver : "?", o.runas ? "yes" : "no", o.ipv4_only ? "yes" : "no",
		 o.dns_forward ? "yes" : "no", o.map_host_loopback ? "yes" : "no");
	set(r, DOCTOR_OK, "pasta", msg, NULL);
}

void doctor_check_cgroup(const struct doctor_env *e, struct doctor_result *r)
{
	enum container_engine engine;
	char why[320], msg[512];

	if (cgroup_probe(e->cgroup_root, CGROUP_CTRL_ALL, why, sizeof(why))) {
		set(r, DOCTOR_OK, "cgroup", "a delegated cgroup v2 subtree offers memory, pids and cpu: "
		    "limits are enforced", NULL);
		return;
	}
	if (limits_systemd_usable(e->get, e->cgroup_root)) {
		snprintf(msg, sizeof(msg), "no delegated cgroup here (%s), but aisb re-runs itself in "
			 "'systemd-run --user --scope -p Delegate=yes'", why);
		set(r, DOCTOR_OK, "cgroup", msg, NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "limits cannot be enforced: %s; default limits degrade (RLIMIT_NPROC "
		 "only, one warning per run) and an explicit --memory/--pids/--cpus is refused (78)", why);
	if ((engine = container_detect(e->root)) != CONTAINER_NONE) {
		/* the host's boot options are not the container's to change */
		set(r, DOCTOR_WARN, "cgroup", msg, container_fix(engine, CONTAINER_NEED_CGROUP));
		return;
	}
	set(r, DOCTOR_WARN, "cgroup", msg,
	    "use the unified cgroup v2 hierarchy (boot with systemd.unified_cgroup_hierarchy=1 on a hybrid "
	    "host) with systemd's user manager (aisb then uses 'systemd-run --user --scope -p "
	    "Delegate=yes'), or delegate a subtree yourself: mkdir /sys/fs/cgroup/aisb-$USER, enable "
	    "'+memory +pids +cpu' in its parent's cgroup.subtree_control, chown it and its cgroup.procs, "
	    "cgroup.subtree_control and cgroup.threads to the user, and start aisb from a shell moved "
	    "into a child of it (see docs/limits.md)");
}

bool doctor_subid_has_range(const char *text, const char *user, uid_t uid, unsigned long min)
{
	char uidbuf[16];

	snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)uid);
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		char name[256];
		unsigned long start, count;
		if (sscanf(line, "%255[^:]:%lu:%lu", name, &start, &count) == 3 &&
		    ((user && streq(name, user)) || streq(name, uidbuf)) && count >= min)
			return true;
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

void doctor_check_subuid(const struct doctor_env *e, struct doctor_result *r)
{
	_cleanup_free_ char *su = read_under(e->etc, "subuid"), *sg = read_under(e->etc, "subgid");
	char msg[384];

	if (su && sg && doctor_subid_has_range(su, e->user, e->uid, 65536) &&
	    doctor_subid_has_range(sg, e->user, e->uid, 65536)) {
		set(r, DOCTOR_OK, "subuid", "subordinate uid and gid ranges exist (optional: aisb maps one "
		    "id and never requires them)", NULL);
		return;
	}
	/* Not a warning: the single-id mapping is the design; ranges only serve a later mode. */
	snprintf(msg, sizeof(msg), "no subordinate id range for %s (fine: aisb maps one id; for a later "
		 "full-range mode: sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s)",
		 e->user ? e->user : "this user", e->user ? e->user : "$USER");
	set(r, DOCTOR_OK, "subuid", msg, NULL);
}

static int dir_writable(const char *dir)
{
	int r = mkdir_p(dir, 0700);
	if (r < 0)
		return r;
	if (access(dir, W_OK | X_OK) < 0)
		return -errno;
	return 0;
}

void doctor_check_dirs(const struct doctor_env *e, struct doctor_result *r)
{
	_cleanup_free_ char *state = NULL, *cache = NULL;
	char msg[640], why[512], fix[128];
	int k;

	/* the rule every command applies before it uses them (util/homedir.h), so doctor fails
	 * exactly where they refuse, with their message */
	if (homedir_aisb_check(e->get, HOMEDIR_STATE, &state, why, sizeof(why), fix, sizeof(fix)) < 0 ||
	    homedir_aisb_check(e->get, HOMEDIR_CACHE, &cache, why, sizeof(why), fix, sizeof(fix)) < 0) {
		set(r, DOCTOR_FAIL, "dirs", why, fix);
		return;
	}
	if ((k = dir_writable(state)) < 0 || (k = dir_writable(cache)) < 0) {
		snprintf(msg, sizeof(msg), "state dir '%s' or cache dir '%s' is not writable: %s", state,
			 cache, strerror(-k));
		snprintf(fix, sizeof(fix), "make them writable, or point XDG_STATE_HOME / XDG_CACHE_HOME "
			 "elsewhere");
		set(r, DOCTOR_FAIL, "dirs", msg, fix);
		return;
	}
	snprintf(msg, sizeof(msg), "state dir %s and cache dir %s are writable", state, cache);
	set(r, DOCTOR_OK, "dirs", msg, NULL);
}

/* The libraries aisb loads only when it pulls, unpacks or builds, or when the tlsgate starts
 * (util/dl.h): loading each one here is the same dlopen() those commands do. A missing one is a
 * warning, since `aisb run` on the host rootfs does not need it. Two tables of one library
 * (libcrypto: the digests, and the tlsgate's X509 part) show it once. */
void doctor_check_libs(const struct doctor_env *e, struct doctor_result *r)
{
	static struct dl_lib *const optional[] = { &dl_libcurl, &dl_libarchive, &dl_libcrypto, &dl_libmnl,
						   &dl_libnftnl, &dl_libcap, &dl_libssl, &dl_libx509, NULL };
	struct dl_lib *const *libs = e->libs ? e->libs : optional;
	struct strbuf ok = { 0 }, bad = { 0 }, fix = { 0 };
	bool missing = false;

	(void)strbuf_puts(&fix, "apt-get install");
	for (size_t i = 0; libs[i]; i++) {
		if (dl_open(libs[i]) == 0) {
			bool seen = false;

			for (size_t j = 0; j < i; j++)
				seen |= streq(libs[j]->soname, libs[i]->soname);
			if (!seen)
				(void)strbuf_printf(&ok, "%s ", libs[i]->soname);
			continue;
		}
		missing = true;
		(void)strbuf_printf(&bad, "%s%s (needed %s)", bad.n ? "; " : "", libs[i]->error,
				    libs[i]->purpose);
		(void)strbuf_printf(&fix, " %s", libs[i]->package);
	}
	(void)strbuf_puts(&ok, "load (pull, images, build, --net allow, the tlsgate and the capability read-back can work)");
	if (missing)
		set(r, DOCTOR_WARN, "libs", bad.p ? bad.p : "a library is missing", fix.p);
	else
		set(r, DOCTOR_OK, "libs", ok.p ? ok.p : "", NULL);
	free(ok.p);
	free(bad.p);
	free(fix.p);
}

int doctor_run(const struct doctor_env *e, FILE *out)
{
	static void (*const checks[])(const struct doctor_env *, struct doctor_result *) = {
		doctor_check_userns, doctor_check_max_userns, doctor_check_seccomp, doctor_check_proc,
		doctor_check_overlay, doctor_check_nft, doctor_check_pasta, doctor_check_cgroup,
		doctor_check_subuid, doctor_check_dirs, doctor_check_libs,
	};
	static const char *const tag[DOCTOR_STATUS_MAX] = { "ok  ", "warn", "FAIL" };
	int fails = 0;

	for (size_t i = 0; i < ELEMENTSOF(checks); i++) {
		struct doctor_result r = { 0 };
		checks[i](e, &r);
		fprintf(out, "%s %-10s %s\n", tag[r.status], r.name, r.msg);
		if (r.status != DOCTOR_OK && *r.fix)
			fprintf(out, "     %-10s fix: %s\n", "", r.fix);
		if (r.status == DOCTOR_FAIL)
			fails++;
	}
	return fails;
}
