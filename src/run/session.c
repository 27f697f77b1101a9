// SPDX-License-Identifier: GPL-2.0-or-later
/* session.c — session directory and the sessions.log line */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "net/netplan.h"
#include "net/pasta.h"
#include "run/session.h"
#include "util/log.h"
#include "util/util.h"


/* Writes the generated passwd, group, hosts and resolv.conf into the directory @dirfd. */
static int write_etc(int dirfd, const struct aisb_plan *p)
{
	char buf[1024];
	int n, r;

	n = snprintf(buf, sizeof(buf),
		     "root:x:0:0:root:/root:/usr/sbin/nologin\n"
		     "%s:x:%u:%u:aisb sandbox:%s:%s\n"
		     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		     p->user, (unsigned)p->uid, (unsigned)p->gid, p->home,
		     access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh");
	if ((r = write_file_at(dirfd, "passwd", buf, (size_t)n, 0644)) < 0)
		return r;
	n = snprintf(buf, sizeof(buf), "root:x:0:\n%s:x:%u:\nnogroup:x:65534:\n", p->user, (unsigned)p->gid);
	if ((r = write_file_at(dirfd, "group", buf, (size_t)n, 0644)) < 0)
		return r;
	n = snprintf(buf, sizeof(buf), "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
				       "127.0.1.1\taisb\n");
	if ((r = write_file_at(dirfd, "hosts", buf, (size_t)n, 0644)) < 0)
		return r;
	/* Allow mode points this at the gate's DNS stub (issue 3); in none mode there is no resolver;
	 * full mode at the address pasta forwards to the host's own resolver (issue 12). */
	n = snprintf(buf, sizeof(buf), netplan_mode(p->netp) == NET_NONE ? "# aisb: --net none, no resolver\n"
				       : netplan_mode(p->netp) == NET_FULL ? "# aisb: --net full, the host's resolver through pasta\n"
							      "nameserver " PASTA_DNS_FORWARD "\noptions edns0\n"
							    : "nameserver 127.0.0.53\noptions edns0\n");
	return write_file_at(dirfd, "resolv.conf", buf, (size_t)n, 0644);
}

/* Whether the directory @fd is the caller's own (@own: owned by it, no access for anyone else)
 * or a parent in which nobody else can replace an entry of the caller's (owned by it or root,
 * writable by others only with the sticky bit, as /dev/shm). Does not log. */
static bool dir_is_safe(int fd, bool own)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	if (own)
		return st.st_uid == getuid() && (st.st_mode & 0077) == 0;
	return (st.st_uid == getuid() || st.st_uid == 0) && ((st.st_mode & 0022) == 0 || (st.st_mode & S_ISVTX));
}

int session_run_dir_open(const char *run_dir, bool create)
{
	_cleanup_free_ char *parent = NULL;
	_cleanup_close_ int pfd = -1, rfd = -1;
	const char *slash = run_dir ? strrchr(run_dir, '/') : NULL;
	struct statfs sfs;

	if (!slash || slash == run_dir || !slash[1] || !(parent = strndup(run_dir, (size_t)(slash - run_dir))))
		return -ENOENT;
	pfd = openat_nofollow(AT_FDCWD, parent, O_RDONLY | O_DIRECTORY, 0);
	if (pfd < 0)
		return pfd;
	if (!dir_is_safe(pfd, false) || fstatfs(pfd, &sfs) < 0 || sfs.f_type != TMPFS_MAGIC)
		return -EPERM;
	if (create && mkdirat(pfd, slash + 1, 0700) < 0 && errno != EEXIST)
		return -errno;
	rfd = openat(pfd, slash + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	if (!dir_is_safe(rfd, true))
		return -EPERM;
	return TAKE_FD(rfd);
}

/* Makes <@dfd>/@name (0700) and opens it as O_PATH; -EEXIST when it is there. Does not log. */
static int make_dir_at(int dfd, const char *name)
{
	int fd;

	if (mkdirat(dfd, name, 0700) < 0)
		return -errno;
	fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Opens <run dir>/<id> (created, 0700) when the run dir is usable (session_run_dir_open(): one
 * someone else made first, or a symlink, is not used: the run goes on with the session dir, as
 * tmux does with its socket dir). Return: the fd, or -errno (the caller falls back to the
 * session dir). Does not log. */
static int open_run_etc(const struct aisb_plan *p, const struct aisb_session *ss)
{
	_cleanup_close_ int rfd = session_run_dir_open(p->run_dir, true);

	return rfd < 0 ? rfd : make_dir_at(rfd, ss->id);
}

/* Stage: the generated /etc files. Should: put them on a tmpfs (open_run_etc()) when there is a
 * safe one, so that a start creates no inode for them on disk (on ext4 every creation searches
 * the inode bitmap and skips recently deleted inodes; perf: a third of aisb's CPU per start went
 * there on a state dir with many sessions behind it, docs/measurements.md), else in
 * <session dir>/etc as before; a session dir that is itself in the run dir holds them. Fills
 * ss->etc_dir. Mustn't: follow a symlink, or use a directory someone else could write. Return: 0
 * or -errno. Does not log. */
static int create_etc(const struct aisb_plan *p, struct aisb_session *ss, int session_fd, bool session_in_run)
{
	_cleanup_close_ int fd = session_in_run ? -ENOENT : open_run_etc(p, ss);
	int r;

	if (fd >= 0) {
		if (!(ss->etc_dir = path_join(p->run_dir, ss->id)))
			return -ENOMEM;
		r = write_etc(fd, p);
		if (r >= 0)
			return 0;
		/* a full tmpfs (a container's 64 MiB /dev/shm): nothing half-written stays behind, and
		 * the run goes on with the session dir, as when the run dir cannot be used at all */
		log_debug_errno(r, "cannot write the generated /etc files to '%s': %m; using the session dir",
				ss->etc_dir);
		(void)rm_rf(ss->etc_dir);
		free(ss->etc_dir);
		ss->etc_dir = NULL;
	}
	if (!(ss->etc_dir = path_join(ss->dir, "etc")))
		return -ENOMEM;
	{
		_cleanup_close_ int efd = make_dir_at(session_fd, "etc");
		return efd < 0 ? efd : write_etc(efd, p);
	}
}

char *session_run_dir(env_getter get)
{
	const char *rt = get("XDG_RUNTIME_DIR");
	char *out;

	if (rt && path_is_absolute(rt) && !streq(rt, "/"))
		return path_join(rt, "aisb");
	return asprintf(&out, "/dev/shm/aisb-%u", (unsigned)getuid()) < 0 ? NULL : out;
}

/* Removes the generated /etc files when they are outside the session dir. Does not log. */
static void remove_run_etc(const struct aisb_session *ss)
{
	if (ss->etc_dir && ss->dir && !path_startswith(ss->etc_dir, ss->dir))
		(void)rm_rf(ss->etc_dir);
}

bool session_fits_run_dir(const struct aisb_plan *p)
{
	return p->run_dir && !p->keep && !(p->rootfs == ROOTFS_IMAGE && !p->image_ephemeral);
}

/* Makes <run dir>/sessions/<id>. Return: an O_PATH fd of it, or -errno. Does not log. */
static int make_run_session_dir(const struct aisb_plan *p, const struct aisb_session *ss)
{
	_cleanup_close_ int rfd = session_run_dir_open(p->run_dir, true), sfd = -1;

	if (rfd < 0)
		return rfd;
	if (mkdirat(rfd, "sessions", 0700) < 0 && errno != EEXIST)
		return -errno;
	sfd = openat(rfd, "sessions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return -errno;
	if (!dir_is_safe(sfd, true))
		return -EPERM;
	return make_dir_at(sfd, ss->id);
}

/* Writes the session's files into @dfd: the generated /etc files, plan.json, supervisor.
 * Return: 0 or -errno. Does not log. */
static int fill_session_dir(const struct aisb_plan *p, struct aisb_session *ss, int dfd, bool in_run)
{
	_cleanup_free_ char *json = NULL;
	unsigned long long st = 0;
	char buf[64];
	int r, n;

	if ((r = create_etc(p, ss, dfd, in_run)) < 0)
		return r;
	if (!(json = plan_to_json(p, netplan_mode(p->netp), ss)))
		return -ENOMEM;
	if ((r = write_file_at(dfd, "plan.json", json, strlen(json), 0600)) < 0)
		return r;
	(void)proc_start_time(getpid(), &st);
	n = snprintf(buf, sizeof(buf), "%d %llu\n", (int)getpid(), st);
	return write_file_at(dfd, "supervisor", buf, (size_t)n, 0600);
}

/* Removes what make_*session_dir() and fill_session_dir() made. Does not log. */
static void drop_session_dir(struct aisb_session *ss)
{
	remove_run_etc(ss);
	free(ss->etc_dir);
	ss->etc_dir = NULL;
	(void)rm_rf(ss->dir);
	free(ss->dir);
	ss->dir = NULL;
}

/* Stage: the session dir. Should: make it in the run dir (<run dir>/sessions/<id>, a tmpfs of
 * the caller's own, session_run_dir_open()) when session_fits_run_dir(), else in the state dir's
 * @sessions, and fill it; a run dir that fails on the way (full: a container's 64 MiB /dev/shm)
 * leaves nothing behind and the state dir is used. Why: each file made and removed on the disk
 * per start cost wall time there (ext4 searches its inode bitmap for every new inode; unlinking
 * a file on a filesystem mounted with "discard" waits for the discard: `perf sched` showed the
 * supervisor in blkdev_issue_discard at exit, docs/measurements.md). Fills ss->dir.
 * Mustn't: follow a symlink, or use a directory someone else could write. Return: 0 or -errno.
 * Logs on failure. */
static int session_dir_stage(const struct aisb_plan *p, struct aisb_session *ss, const char *sessions)
{
	int r;

	if (session_fits_run_dir(p)) {
		_cleanup_close_ int dfd = -1;

		if (asprintf(&ss->dir, "%s/sessions/%s", p->run_dir, ss->id) < 0) {
			ss->dir = NULL;
			return log_error_errno(-ENOMEM, "cannot create the session dir: %m");
		}
		dfd = make_run_session_dir(p, ss);
		r = dfd < 0 ? dfd : fill_session_dir(p, ss, dfd, true);
		if (r >= 0)
			return 0;
		log_debug_errno(r, "cannot use the run dir for session dir '%s': %m; using the state dir", ss->dir);
		if (dfd >= 0)
			drop_session_dir(ss);
		free(ss->dir);
		ss->dir = NULL;
	}
	if (!(ss->dir = path_join(sessions, ss->id)))
		return log_error_errno(-ENOMEM, "cannot create the session dir: %m");
	{
		_cleanup_close_ int dfd = -1;

		if (mkdir(ss->dir, 0700) < 0)
			return log_error_errno(-errno, "cannot create session dir '%s': %m", ss->dir);
		dfd = open(ss->dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		r = dfd < 0 ? -errno : fill_session_dir(p, ss, dfd, false);
	}
	if (r < 0) {
		log_error_errno(r, "cannot write session dir '%s': %m", ss->dir);
		drop_session_dir(ss);
	}
	return r;
}

int session_create(const struct aisb_plan *p, struct aisb_session *ss)
{
	_cleanup_free_ char *sessions = path_join(p->state_dir, "sessions");
	char id[25];
	int r;

	if (!sessions)
		return -ENOMEM;
	r = mkdir_p(sessions, 0700);
	if (r < 0)
		return log_error_errno(r, "cannot create state dir '%s': %m (set XDG_STATE_HOME to a writable "
				       "directory)", sessions);
	/* Sources are opened without following any symlink: use canonical paths from here on. */
	if (!(ss->state_dir = realpath(p->state_dir, NULL)))
		return log_error_errno(-errno, "cannot resolve state dir '%s': %m", p->state_dir);
	free(sessions);
	if (!(sessions = path_join(ss->state_dir, "sessions")))
		return -ENOMEM;
	if (p->home_src) {
		_cleanup_free_ char *rel = NULL;
		ss->home_src = asprintf(&rel, "homes/%s", p->home_name ? p->home_name : "default") < 0 ? NULL
			       : path_join(ss->state_dir, rel);
		if (!ss->home_src)
			return -ENOMEM;
		r = mkdir_p(ss->home_src, 0700);
		if (r < 0)
			return log_error_errno(r, "cannot create the sandbox home '%s': %m", ss->home_src);
	}
	r = random_hex(id, 6);
	if (r < 0)
		return log_error_errno(r, "cannot get random bytes: %m");
	if (!(ss->id = strdup(id)))
		return log_error_errno(-ENOMEM, "cannot create the session dir: %m");
	return session_dir_stage(p, ss, sessions);
}

/* The host's roots file for the bundle: a few hundred KiB (Debian's: 220 KiB, 146 roots) */
#define TLS_ROOTS_MAX (16u << 20)

int session_write_tls(const struct aisb_session *ss, const char *ca_pem, const char *roots)
{
	_cleanup_close_ int dfd = open(ss->etc_dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_free_ char *buf = NULL, *bundle = NULL;
	size_t len = 0, cl = strlen(ca_pem);
	int r;

	if (dfd < 0)
		return log_error_errno(-errno, "cannot open '%s' for the session CA: %m", ss->etc_dir);
	/* the system's file, which OpenSSL reads through its links too (/usr/lib/ssl/cert.pem) */
	r = read_file_at(AT_FDCWD, roots, TLS_ROOTS_MAX, &buf, &len);
	if (r < 0)
		return log_error_errno(r, "cannot read the host's trust store '%s' for the sandbox's CA bundle: %m",
				       roots);
	if (!(bundle = malloc(len + cl + 2)))
		return log_error_errno(-ENOMEM, "out of memory");
	memcpy(bundle, buf, len);
	if (len && buf[len - 1] != '\n')
		bundle[len++] = '\n';
	memcpy(bundle + len, ca_pem, cl);
	if ((r = write_file_at(dfd, PLAN_TLS_CA_NAME, ca_pem, cl, 0644)) < 0 ||
	    (r = write_file_at(dfd, PLAN_TLS_BUNDLE_NAME, bundle, len + cl, 0644)) < 0)
		return log_error_errno(r, "cannot write the session CA into '%s': %m", ss->etc_dir);
	return 0;
}

void session_done(struct aisb_session *ss)
{
	free(ss->id);
	free(ss->dir);
	free(ss->etc_dir);
	free(ss->state_dir);
	free(ss->home_src);
	free(ss->workspace_dir);
	memset(ss, 0, sizeof(*ss));
}

int session_set_init_pid(const struct aisb_session *ss, pid_t pid)
{
	_cleanup_close_ int dfd = open(ss->dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	if (dfd < 0)
		return -errno;
	return write_file_at(dfd, "init", buf, (size_t)n, 0600);
}

struct kept_log {
	char name[80];
	struct timespec mtime;
	long long size;
};

static int kept_cmp(const void *a, const void *b)
{
	const struct kept_log *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Keeps the newest SESSION_EGRESS_KEEP logs in @dfd (egress/) as far as they fit
 * SESSION_EGRESS_KEEP_BYTES (the newest always), removes the rest. Does not log. */
static void prune_kept_logs(int dfd)
{
	struct kept_log *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		size_t l = strlen(de->d_name);

		if (l < 7 || l >= sizeof(v->name) || !streq(de->d_name + l - 6, ".jsonl") ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct kept_log *nv = realloc(v, (cap = cap ? 2 * cap : 32) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].size = (long long)st.st_size;
		v[n++].mtime = st.st_mtim;
	}
	closedir(d);
	if (n > 1) {
		long long total = 0;

		qsort(v, n, sizeof(*v), kept_cmp);
		for (size_t i = 0; i < n; i++) {
			total += v[i].size;
			if (i > 0 && (i >= SESSION_EGRESS_KEEP || total > SESSION_EGRESS_KEEP_BYTES))
				(void)unlinkat(dfd, v[i].name, 0);
		}
	}
	free(v);
}

/* Copies the file @from to <@dfd>/@name through a temporary name, so that a reader never sees
 * half of it. Return: 0, or -1 with errno set. Does not log. */
static int copy_log(const char *from, int dfd, const char *name)
{
	_cleanup_close_ int in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out = -1;
	char tmp[96], buf[65536];
	ssize_t n = 0;
	int e;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	if (in < 0 || (out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		int r = write_full(out, buf, (size_t)n);
		if (r < 0) {
			errno = -r;
			n = -1;
			break;
		}
	}
	if (n == 0 && renameat(dfd, tmp, dfd, name) == 0)
		return 0;
	e = errno;
	(void)unlinkat(dfd, tmp, 0);
	errno = e;
	return -1;
}

/* Moves the session's egress log to egress/<id>.jsonl, so that the denial summary's "aisb logs
 * ID" still works once the session dir is gone; only the last SESSION_EGRESS_KEEP stay. Logs on
 * failure (a warning: the run itself is over). */
static void keep_egress_log(const struct aisb_session *ss)
{
	_cleanup_free_ char *from = path_join(ss->dir, "egress.jsonl"), *dir = path_join(ss->state_dir, "egress");
	_cleanup_close_ int dfd = -1;
	char name[80];
	struct stat st;

	if (!from || !dir || lstat(from, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		goto fail;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		goto fail;
	snprintf(name, sizeof(name), "%s.jsonl", ss->id);
	/* a session dir in the run dir is on another filesystem: copy (session.h) */
	if (renameat(AT_FDCWD, from, dfd, name) < 0 && (errno != EXDEV || copy_log(from, dfd, name) < 0))
		goto fail;
	prune_kept_logs(dfd);
	return;
fail:
	log_warn_errno(-errno, "cannot keep the egress log in '%s': %m", dir);
}

int session_finish(const struct aisb_plan *p, const struct aisb_session *ss, int exit_code, long long start_usec,
		   size_t git_quarantined)
{
	_cleanup_free_ char *logpath = path_join(ss->state_dir, "sessions.log");
	_cleanup_close_ int fd = -1;
	struct timespec now;
	json_object *o, *a;
	const char *line;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &now);
	o = json_object_new_object();
	a = json_object_new_array();
	for (size_t i = 0; p->argv && p->argv[i]; i++)
		json_object_array_add(a, json_object_new_string(p->argv[i]));
	json_object_object_add(o, "id", json_object_new_string(ss->id));
	json_object_object_add(o, "start", json_object_new_int64(start_usec / 1000000));
	json_object_object_add(o, "end", json_object_new_int64(now.tv_sec));
	json_object_object_add(o, "command", a);
	json_object_object_add(o, "project", plan_project_src(p, ss) ? json_object_new_string(plan_project_src(p, ss)) : NULL);
	json_object_object_add(o, "net", json_object_new_string(net_mode_to_string(netplan_mode(p->netp))));
	json_object_object_add(o, "exit", json_object_new_int(exit_code));
	if (git_quarantined)
		json_object_object_add(o, "git_quarantined", json_object_new_int64((int64_t)git_quarantined));
	line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (logpath)
		fd = open(logpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		/* one write per line, so concurrent sessions never interleave */
		_cleanup_free_ char *l = NULL;
		if (asprintf(&l, "%s\n", line) >= 0)
			(void)write_full(fd, l, strlen(l));
	}
	json_object_put(o);
	/* the run dir's copy goes even for a kept session: nothing reads it after the run */
	remove_run_etc(ss);
	if (!p->keep && ss->dir) {
		keep_egress_log(ss);
		r = rm_rf(ss->dir);
		if (r < 0)
			log_warn_errno(r, "cannot remove session dir '%s': %m", ss->dir);
	} else if (p->keep)
		log_info("session kept: %s", ss->dir);
	return r;
}
