/* SPDX-License-Identifier: GPL-2.0-or-later */
/* procfs.h — the /proc covers of every sandbox: `aisb run` and `aisb build` RUN steps (issue 10).
 *
 * Files under a fresh /proc that act on the whole machine (sysctls, IRQ affinity, sysrq, PCI
 * config space, ...) are guarded by their mode only: the kernel compares the opener's kuid with
 * 0, not its capabilities. When the caller is root, the sandbox's uid maps to kuid 0 and passes
 * every such check, so a sandbox could write host sysctls (measured: kernel.printk_ratelimit;
 * core_pattern opened for writing, whose "|prog" value runs as host root). procfs_harden() is
 * the stage both paths run after mounting their /proc: it sets user.max_user_namespaces=0 (the
 * second wall behind seccomp against nested user namespaces, per user namespace), then binds
 * the host-global entries onto themselves read-only, as bubblewrap and the OCI runtimes do, and
 * hides the entries that only kuid 0 could read. By default the whole /proc is read-only instead
 * (one mount attribute, which also stops writes to other processes' /proc/PID/mem); only
 * --allow-ptrace gets a writable /proc, with the read-only binds. The mounts stay because the sandbox cannot
 * change its mount tree (seccomp denies the mount API; the workload also has no capability).
 */
#ifndef AISB_NS_PROCFS_H
#define AISB_NS_PROCFS_H

#include <stdbool.h>
#include <stddef.h>

enum procfs_cover_kind {
	PROCFS_RO,   /* bound onto itself read-only (recursively), when /proc stays writable */
	PROCFS_HIDE, /* covered: a file by /dev/null, a directory by an empty read-only tmpfs */
	PROCFS_HIDE_KUID0, /* the same, only for a sandbox running as kuid 0 (root-only mode) */
	PROCFS_COVER_KIND_MAX,
};

struct procfs_cover {
	const char *name;           /* relative to the proc root */
	enum procfs_cover_kind kind;
};

/* The fixed list of covers (absent entries are skipped: they depend on the kernel's config).
 * Pure. */
const struct procfs_cover *procfs_covers(size_t *n);

/**
 * procfs_harden() - the /proc stage of a sandbox
 * @proc_fd: the root of the sandbox's freshly mounted proc (any open fd of it)
 * @null_fd: an fd of /dev/null in the caller's mount namespace, the cover for hidden files
 * @kuid0: the sandbox runs as kuid 0 (a root caller): also hide the entries that only kuid 0 can
 *         read (PROCFS_HIDE_KUID0, and PROCFS_HIDE ones that are root-only on this kernel);
 *         for any other caller their mode refuses them already
 * @writable: keep /proc writable (--allow-ptrace: /proc/PID/mem, /proc/self/oom_score_adj, ...)
 *            and bind the host-global trees read-only one by one; otherwise the proc mount itself
 *            becomes read-only and those binds are not needed
 * @container_proc: @proc_fd is the container's /proc, bound by --container-proc (plan.h), not a
 *                  fresh one: where the container engine made its /proc/sys read-only (podman's
 *                  and Docker's masks, measured in rootful podman 4.3.1: EROFS), the sysctl
 *                  cannot be written through any mount of it, so it is skipped (return 1) and
 *                  nested user namespaces are refused by seccomp alone, as CONTAINER_PROC_EXPOSURE
 *                  states; every other stage runs as for a fresh /proc
 * @failed: set to the entry that could not be covered (or the sysctl) on failure
 *
 * Must run with CAP_SYS_ADMIN and CAP_SYS_RESOURCE in the sandbox's user namespace, in its mount
 * namespace, before anything of the sandbox's own runs. Return: 0; 1 when the sysctl was skipped
 * (only with @container_proc); or -errno. Does not log.
 */
int procfs_harden(int proc_fd, int null_fd, bool kuid0, bool writable, bool container_proc, const char **failed);

/* procfs_harden() on the caller's /proc with its /dev/null, after the pivot: the stage `aisb
 * run`'s init and a build's RUN step both run. Return: as procfs_harden() (*@failed names the
 * entry). Does not log. */
int procfs_stage(bool kuid0, bool writable, bool container_proc, const char **failed);

#endif
