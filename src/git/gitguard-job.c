// SPDX-License-Identifier: GPL-2.0-or-later
/* gitguard-job.c — one run's git check as a value: run it, and record it on disk before the
 * workload starts so that a check cut short (a SIGKILLed supervisor, the OOM killer, a CI job's
 * timeout) is run by the next aisb command instead of being forgotten (issue 21).
 *
 * The record is <dir>/<id>.json, 0600, written under another name and renamed into place (a
 * reader never sees half of it; see RECORD_BLOCK for why files are reused): {"id", "since": [sec, nsec], "owner": [pid, start time],
 * "roots": [{"root", "file", "pinned": [...], "quarantine"}]}. It holds host paths the caller
 * chose (the project, its --mounts), never anything of the sandbox's and never an env value.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "git/gitguard.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/util.h"

#define RECORD_MAX (1u << 20)

unsigned long long gitguard_pidns(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

void gitguard_job_free(struct gitguard_job *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->roots[i].root);
		strv_free(j->roots[i].pinned);
		free(j->roots[i].quarantine);
	}
	free(j->roots);
	free(j->id);
	*j = (struct gitguard_job){ 0 };
}

int gitguard_job_add(struct gitguard_job *j, const char *root, bool is_file, char **pinned, const char *quarantine)
{
	struct gitguard_root *v = realloc(j->roots, (j->n + 1) * sizeof(*v));

	if (!v) {
		strv_free(pinned);
		return -ENOMEM;
	}
	j->roots = v;
	v[j->n] = (struct gitguard_root){ .root = strdup(root), .is_file = is_file, .pinned = pinned,
					  .quarantine = quarantine ? strdup(quarantine) : NULL };
	if (!v[j->n].root || (quarantine && !v[j->n].quarantine)) {
		free(v[j->n].root);
		free(v[j->n].quarantine);
		strv_free(pinned);
		return -ENOMEM;
	}
	j->n++;
	return 0;
}

int gitguard_job_run(const struct gitguard_job *j, FILE *f, struct gitguard_verdict *v)
{
	for (size_t i = 0; i < j->n; i++) {
		const struct gitguard_root *rt = &j->roots[i];
		struct gitguard_options o = { .root = rt->root, .pinned = rt->pinned, .since = j->since,
					      .quarantine = rt->quarantine };
		struct gitguard_report rep = { 0 };
		int r = rt->is_file ? gitguard_check_file(&o, &rep) : gitguard_check(&o, &rep);

		if (r < 0) {
			fputs("aisb: WARNING: cannot check '", f);
			fputs(rt->root, f);
			fprintf(f, "' for files the sandbox planted for git: %s; run git there only after checking its "
				   ".git yourself\n", strerror(-r));
			v->incomplete = true;
		}
		v->found += gitguard_report_print(&rep, o.quarantine, f);
		v->unjudged += rep.n_unjudged;
		v->incomplete |= rep.incomplete;
		for (size_t k = 0; k < rep.n; k++)
			v->failed += rep.v[k].err < 0;
		gitguard_report_free(&rep);
	}
	return 0;
}

static json_object *job_to_json(const struct gitguard_job *j)
{
	json_object *o = json_object_new_object(), *roots = json_object_new_array(), *a, *b;

	json_object_object_add(o, "id", json_object_new_string(j->id));
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_int64((int64_t)j->since.tv_sec));
	json_object_array_add(a, json_object_new_int64((int64_t)j->since.tv_nsec));
	json_object_object_add(o, "since", a);
	b = json_object_new_array();
	json_object_array_add(b, json_object_new_int64((int64_t)j->owner));
	json_object_array_add(b, json_object_new_uint64(j->owner_start));
	json_object_object_add(o, "owner", b);
	b = json_object_new_array();
	json_object_array_add(b, json_object_new_int64((int64_t)j->init));
	json_object_array_add(b, json_object_new_uint64(j->init_start));
	json_object_object_add(o, "init", b);
	json_object_object_add(o, "pidns", json_object_new_uint64(j->pidns));
	for (size_t i = 0; i < j->n; i++) {
		json_object *r = json_object_new_object(), *pins = json_object_new_array();
		json_object_object_add(r, "root", json_object_new_string(j->roots[i].root));
		json_object_object_add(r, "file", json_object_new_boolean(j->roots[i].is_file));
		for (size_t k = 0; j->roots[i].pinned && j->roots[i].pinned[k]; k++)
			json_object_array_add(pins, json_object_new_string(j->roots[i].pinned[k]));
		json_object_object_add(r, "pinned", pins);
		json_object_object_add(r, "quarantine",
				       j->roots[i].quarantine ? json_object_new_string(j->roots[i].quarantine) : NULL);
		json_object_array_add(roots, r);
	}
	json_object_object_add(o, "roots", roots);
	return o;
}

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

static int job_from_json(json_object *o, struct gitguard_job *j)
{
	json_object *since, *owner, *roots;
	const char *id = str_of(o, "id");

	if (!id || !json_object_object_get_ex(o, "since", &since) || json_object_array_length(since) != 2 ||
	    !json_object_object_get_ex(o, "owner", &owner) || json_object_array_length(owner) != 2 ||
	    !json_object_object_get_ex(o, "roots", &roots) || !json_object_is_type(roots, json_type_array))
		return -EINVAL;
	if (!(j->id = strdup(id)))
		return -ENOMEM;
	j->since.tv_sec = (time_t)json_object_get_int64(json_object_array_get_idx(since, 0));
	j->since.tv_nsec = (long)json_object_get_int64(json_object_array_get_idx(since, 1));
	j->owner = (pid_t)json_object_get_int64(json_object_array_get_idx(owner, 0));
	j->owner_start = json_object_get_uint64(json_object_array_get_idx(owner, 1));
	{
		json_object *init, *ns;
		if (json_object_object_get_ex(o, "pidns", &ns))
			j->pidns = json_object_get_uint64(ns);
		if (json_object_object_get_ex(o, "init", &init) && json_object_array_length(init) == 2) {
			j->init = (pid_t)json_object_get_int64(json_object_array_get_idx(init, 0));
			j->init_start = json_object_get_uint64(json_object_array_get_idx(init, 1));
		}
	}
	for (size_t i = 0; i < json_object_array_length(roots); i++) {
		json_object *r = json_object_array_get_idx(roots, i), *pins, *file;
		const char *root = str_of(r, "root");
		char **pinned = NULL;
		int e;
		if (!root || !path_is_absolute(root))
			return -EINVAL;
		if (json_object_object_get_ex(r, "pinned", &pins) && json_object_is_type(pins, json_type_array))
			for (size_t k = 0; k < json_object_array_length(pins); k++) {
				const char *pk = json_object_get_string(json_object_array_get_idx(pins, k));
				if (pk && strv_push(&pinned, pk) < 0) {
					strv_free(pinned);
					return -ENOMEM;
				}
			}
		e = gitguard_job_add(j, root, json_object_object_get_ex(r, "file", &file) && json_object_get_boolean(file),
				     pinned, str_of(r, "quarantine"));
		if (e < 0)
			return e;
	}
	return 0;
}

/* The record's file is reused, never freed (issue 21, measured in session 6: on an ext4 mounted
 * with `discard`, freeing a file's block makes the unlink wait for the device; a run that made
 * and removed its session files on the disk started 11.6 ms against 8.4 ms on tmpfs). So a
 * record is written over a spare one's block, padded with spaces to whole blocks (JSON ignores
 * them), and retired by a rename: <dir>/.spare-<id> -> .w-<id> (written) -> <id>.json (live) ->
 * .spare-<id>. Readers take only <id>.json files whose "id" matches the name. */
#define RECORD_BLOCK 4096

/* Takes a spare record file as @wname of @dfd. Return: its fd (O_WRONLY), or -errno. */
static int take_spare(int dfd, const char *wname, off_t *size)
{
	struct dirent *de;
	int fd = -1, dup;
	DIR *d;

	dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0 || !(d = fdopendir(dup))) {
		if (dup >= 0)
			close(dup);
		return -errno;
	}
	while (fd < 0 && (de = readdir(d))) {
		struct stat st;
		if (strncmp(de->d_name, ".spare-", 7) != 0 || renameat(dfd, de->d_name, dfd, wname) < 0)
			continue; /* another run took it first */
		fd = openat(dfd, wname, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
		} else if (fd >= 0)
			*size = st.st_size;
		if (fd < 0)
			(void)unlinkat(dfd, wname, 0);
	}
	closedir(d);
	return fd >= 0 ? fd : -ENOENT;
}

int gitguard_job_record(const struct gitguard_job *j, const char *dir)
{
	_cleanup_free_ char *wname = NULL, *name = NULL, *buf = NULL;
	_cleanup_close_ int dfd = -1, fd = -1;
	size_t len, padded;
	off_t size = 0;
	json_object *o;
	const char *text;
	int r;

	dfd = openat_nofollow(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
	if (dfd == -ENOENT) {
		r = mkdir_p(dir, 0700);
		if (r < 0)
			return r;
		dfd = openat_nofollow(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
	}
	if (dfd < 0)
		return dfd;
	if (asprintf(&wname, ".w-%s", j->id) < 0 || asprintf(&name, "%s.json", j->id) < 0)
		return -ENOMEM;
	o = job_to_json(j);
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	len = text ? strlen(text) : 0;
	fd = text ? take_spare(dfd, wname, &size) : -ENOMEM;
	if (fd == -ENOENT)
		fd = openat(dfd, wname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = fd == -1 ? -errno : fd;
		json_object_put(o);
		return r;
	}
	/* whole blocks, and never less than the file already is: nothing is truncated (freed) */
	padded = (len + 1 + RECORD_BLOCK - 1) / RECORD_BLOCK * RECORD_BLOCK;
	if ((off_t)padded < size)
		padded = (size_t)size;
	buf = malloc(padded);
	if (buf) {
		memcpy(buf, text, len);
		memset(buf + len, ' ', padded - len - 1);
		buf[padded - 1] = '\n';
	}
	json_object_put(o);
	if (!buf)
		r = -ENOMEM;
	else if (pwrite(fd, buf, padded, 0) != (ssize_t)padded)
		r = errno ? -errno : -EIO;
	else
		r = renameat(dfd, wname, dfd, name) < 0 ? -errno : 0;
	if (r < 0)
		(void)unlinkat(dfd, wname, 0);
	return r;
}

/* Retires record @name of @dfd (session @id) as a spare; removed when that fails. */
static int retire(int dfd, const char *name, const char *id)
{
	_cleanup_free_ char *spare = NULL;

	if (asprintf(&spare, ".spare-%s", id) < 0 || renameat(dfd, name, dfd, spare) < 0)
		return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	return 0;
}

int gitguard_job_forget(const struct gitguard_job *j, const char *dir)
{
	_cleanup_free_ char *name = NULL;
	_cleanup_close_ int dfd = openat_nofollow(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);

	if (dfd < 0)
		return dfd;
	if (asprintf(&name, "%s.json", j->id) < 0)
		return -ENOMEM;
	return retire(dfd, name, j->id);
}

/* The state of process @pid (field 3 of /proc/PID/stat), 0 when there is none, or another
 * process has the pid now. */
static char proc_state(pid_t pid, unsigned long long start)
{
	_cleanup_free_ char *buf = NULL;
	char path[64], *p;

	if (pid <= 0 || !proc_is(pid, start))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file_at(AT_FDCWD, path, 4096, &buf, NULL) < 0 || !(p = strrchr(buf, ')')) || p[1] != ' ')
		return 0;
	return p[2];
}

/* Ends the sandbox whose init is @pid (SIGKILL kills its pid namespace) and waits, up to 10 s,
 * for it to be gone. Return: 0, or -EBUSY when it still runs. */
static int sandbox_gone(pid_t pid, unsigned long long start)
{
	char st = proc_state(pid, start);

	if (!st || st == 'Z' || st == 'X')
		return 0;
	{
		int fd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (fd >= 0) {
			if (proc_is(pid, start))
				(void)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
			close(fd);
		}
	}
	for (int i = 0; i < 500; i++) {
		struct timespec ts = { 0, 20L * 1000 * 1000 };
		st = proc_state(pid, start);
		if (!st || st == 'Z' || st == 'X')
			return 0;
		nanosleep(&ts, NULL);
	}
	return -EBUSY;
}

/* Runs one record of @dfd when its owner is gone. Return: 1 when it ran, 0 when skipped, or
 * -errno. Logs (its header and findings go to @f). */
static int run_record(const char *dir, int dfd, const char *name, FILE *f, bool preview, struct gitguard_verdict *v)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -1;
	struct gitguard_job j = { 0 };
	json_object *o;
	struct stat st;
	char when[64];
	size_t len = 0;
	int r;

	fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* one checker at a time; a record the other one finished is unlinked by then */
	if (flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0)
		return -errno;
	{
		/* still the record of that name (a checker that held the lock retired it) */
		struct stat now;
		if (!S_ISREG(st.st_mode) || fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_ino != st.st_ino ||
		    now.st_dev != st.st_dev)
			return 0;
	}
	{
		char fdpath[64];
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		r = read_file_at(AT_FDCWD, fdpath, RECORD_MAX, &text, &len);
	}
	o = r < 0 ? NULL : json_tokener_parse(text ? text : "");
	r = o ? job_from_json(o, &j) : -EINVAL;
	if (o)
		json_object_put(o);
	if (r == 0) {
		size_t l = strlen(name);
		if (strlen(j.id) != l - 5 || strncmp(j.id, name, l - 5) != 0)
			r = -EINVAL; /* not the record its name says */
	}
	if (r < 0) {
		_cleanup_free_ char *path = path_join(dir, name), *w = path ? shell_word(path) : NULL;
		gitguard_job_free(&j);
		/* said on every command until it is removed: a check that may never have run is not
		 * dropped silently, and only the user can say that its project was checked */
		fprintf(f, "aisb: WARNING: the record of a git check that never ran cannot be read (%s): a session "
			   "ended without checking what it wrote for git; run git in its project only after checking "
			   "its .git yourself, then remove the record: rm %s\n", strerror(-r), w ? w : name);
		v->incomplete = true;
		return -EINVAL;
	}
	/* Live: its own supervisor runs it. Recorded in another pid namespace (a container that
	 * shares this state dir), or without a start time, liveness cannot be told from here: left
	 * to an aisb there, never run against a sandbox that may still be writing. */
	if (proc_is(j.owner, j.owner_start)) {
		gitguard_job_free(&j);
		return 0;
	}
	if (!j.owner_start || !j.pidns || j.pidns != gitguard_pidns() || (j.init > 0 && !j.init_start)) {
		/* said, not dropped: until an aisb that can tell runs it, its project is unchecked */
		fprintf(f, "aisb: note: session %s's check for planted git files is pending, but whether its aisb still "
			   "runs cannot be told from here (another pid namespace, such as a container sharing this state "
			   "dir); an aisb command there runs it once that session has ended\n", j.id);
		v->incomplete = true;
		gitguard_job_free(&j);
		return 0;
	}
	/* The supervisor is gone; its sandbox dies with it (PDEATHSIG), but not at once: a check
	 * made while the workload still writes could miss what it writes next. init exits only
	 * after every process of its pid namespace is gone, so the check waits for that. */
	if (!preview && sandbox_gone(j.init, j.init_start) < 0) {
		fprintf(f, "aisb: WARNING: session %s's aisb is gone but its sandbox (pid %d) still runs: what it wrote "
			   "for git is not checked yet; do not run git in its project until it has ended\n", j.id,
			(int)j.init);
		v->incomplete = true;
		gitguard_job_free(&j);
		return 0;
	}
	{
		struct tm tm;
		time_t t = j.since.tv_sec;
		if (!localtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm))
			snprintf(when, sizeof(when), "@%lld", (long long)t);
	}
	if (preview) {
		fprintf(f, "aisb: session %s ended without its check for planted git files; the next aisb command that "
			   "is not a preview runs it\n", j.id);
		v->incomplete = true;
		gitguard_job_free(&j);
		return 1;
	}
	fprintf(f, "aisb: session %s ended without its check for planted git files (its aisb was killed); checking "
		   "now what it changed since it started (%s):\n", j.id, when);
	{
		struct gitguard_verdict one = { 0 };
		gitguard_job_run(&j, f, &one);
		if (!one.found && !one.incomplete)
			fputs("aisb:   nothing planted for git\n", f);
		v->found += one.found;
		v->unjudged += one.unjudged;
		v->failed += one.failed;
		v->incomplete |= one.incomplete;
	}
	/* done: retired while locked, so a second checker waiting on the lock skips it */
	r = retire(dfd, name, j.id) < 0 ? -EIO : 1;
	gitguard_job_free(&j);
	return r;
}

int gitguard_pending_run(const char *dir, FILE *f, bool preview, struct gitguard_verdict *v)
{
	_cleanup_close_ int dfd = -1;
	struct dirent *de;
	int n = 0, err = 0;
	DIR *d;

	dfd = openat_nofollow(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	{
		int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
		if (dup < 0 || !(d = fdopendir(dup))) {
			if (dup >= 0)
				close(dup);
			return -errno;
		}
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		int r;
		if (de->d_name[0] == '.' || l <= 5 || !streq(de->d_name + l - 5, ".json"))
			continue;
		r = run_record(dir, dfd, de->d_name, f, preview, v);
		if (r > 0)
			n++;
		else if (r < 0 && !err)
			err = r;
	}
	closedir(d);
	return err < 0 && !n ? err : n;
}
