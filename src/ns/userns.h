/* SPDX-License-Identifier: GPL-2.0-or-later */
/* userns.h — the one place aisb makes user namespaces and writes their id maps.
 *
 * Every user namespace aisb creates maps exactly one uid and one gid (struct userns_map):
 * the sandbox (1000 -> the caller), a build step (0 or the image's user -> the caller), the
 * nobody namespace of the idmapped /etc (0 -> 65534), doctor's probes (0 -> the caller).
 * setgroups is denied before the gid map is written, as an unprivileged gid_map requires and as
 * a root caller must too (no setgroups(2) inside can drop a supplementary group to reach a file
 * whose group bits deny it). Nothing here logs: the callers know what the namespace was for.
 */
#ifndef AISB_NS_USERNS_H
#define AISB_NS_USERNS_H

#include <stdbool.h>
#include <sys/types.h>

/* The host uid and gid a root caller's sandbox, gate and resolver run as (issue 22): kernel uid 0
 * is exempt from RLIMIT_NPROC and owns root's files, so nothing of a root caller's run keeps it.
 * Just above systemd's container range (524288-1879048191) and below its foreign-image range
 * (2147352576-): no user, service or container of a systemd host is given it (docs/limits.md). */
#define USERNS_ROOT_RUN_ID 1879048192u

/* One id each: @inside_uid is @host_uid's name inside, @inside_gid @host_gid's. */
struct userns_map {
	uid_t inside_uid, host_uid;
	gid_t inside_gid, host_gid;
};

/* The map that makes the caller root inside (doctor's probes, the build's steps). Take it before
 * entering: in an unmapped namespace getuid() reads as the overflow id. Does not log. */
struct userns_map userns_map_root(void);

/**
 * userns_write_maps() - deny setgroups, write uid_map and gid_map of @pid's user namespace
 * @pid:    the process whose namespace is mapped; 0 for this process
 * @m:      the one id of each kind
 * @failed: set to the file that could not be written ("setgroups", "uid_map", "gid_map"); may be NULL
 *
 * A missing setgroups file (kernels before 3.19) is not an error. Return: 0 or -errno. Does not log.
 */
int userns_write_maps(pid_t pid, const struct userns_map *m, const char **failed);

/**
 * userns_enter() - move this process into a new user namespace mapped by @m, then unshare @more
 * @m:      the map (written by this process itself when its host ids are the caller's own;
 *          other host ids, for root only, through userns_open() and setns(): then root's
 *          supplementary groups are dropped and the process takes @m's inside ids)
 * @more:   further CLONE_NEW* flags, unshared after the maps so that they are owned by it
 * @failed: set to the step that failed ("user namespace", a map file, "namespaces"); may be NULL
 *
 * The process holds every capability inside until it execs as a non-zero uid or drops them.
 * Return: 0 or -errno. Does not log.
 */
int userns_enter(const struct userns_map *m, int more, const char **failed);

/**
 * userns_clone() - fork into a new user namespace plus @more, the new process PID 1 of any new
 *                  pid namespace
 * @more: further CLONE_NEW* flags, created at once with the user namespace (which owns them)
 *
 * A raw clone with a NULL stack: like fork(2), so the child continues here. Its id maps are
 * unwritten: the parent writes them with userns_write_maps() (the sandbox's init waits for
 * that). Return: as fork(2): the child's pid, 0 in the child, -1 with errno. Does not log.
 */
pid_t userns_clone(int more);

/**
 * userns_unshare() - move this process into a new user namespace, unmapped, plus @more
 * @more: further CLONE_NEW* flags (CLONE_NEWNS for a root of its own)
 *
 * No id map is written: inside, the process maps to no id (its files are still checked with its
 * host ids), holds every capability of the new namespace only and gives up whatever it held on
 * the host (a root caller's every capability). For the gate and its resolver, which only mount
 * and pivot, then drop those capabilities (net/gate-confine.c). Return: 0 or -errno. Does not
 * log.
 */
int userns_unshare(int more);

/**
 * userns_try() - can this process create a user namespace (unshare(CLONE_NEWUSER))?
 *
 * For doctor's probe child only: it moves the caller into an unmapped namespace.
 * Return: 0 or -errno. Does not log.
 */
int userns_try(void);

/**
 * userns_open() - an fd of a new user namespace mapped by @m, with no process left in it
 * @m: the map; ids other than the caller's need CAP_SETUID/CAP_SETGID (a root caller)
 *
 * For mount_setattr(MOUNT_ATTR_IDMAP): a short-lived child holds the namespace while this
 * process writes its maps and opens /proc/CHILD/ns/user. Return: the fd (O_CLOEXEC) or -errno.
 * Does not log.
 */
int userns_open(const struct userns_map *m);

/**
 * userns_join() - setns(2) into the user namespace @fd (an fd of /proc/PID/ns/user)
 * @fd: the namespace; its owner joins it without privilege, holding every capability in it
 *
 * For the podman builder's netns holder (build/podman-netns.h), which joins rootless podman's
 * user namespace. The process must be single-threaded. The credential change clears the
 * dumpable flag and the parent-death signal: the caller sets again what it needs. Return: 0 or
 * -errno. Does not log.
 */
int userns_join(int fd);

/**
 * userns_clone_filtered() - does a seccomp filter deny clone() with CLONE_NEWUSER here?
 * userns_unshare_filtered() - ... unshare() with CLONE_NEWUSER?
 *
 * Each makes the call with flags the kernel refuses (EINVAL) before it creates anything, so
 * another answer is the filter's. Does not log.
 */
bool userns_clone_filtered(void);
bool userns_unshare_filtered(void);

/* Whether this process is in the initial user namespace (its uid_map is the identity of every
 * id), as real root outside any container's user namespace is. Does not log. */
bool userns_is_initial(void);

#endif
