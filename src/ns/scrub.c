// SPDX-License-Identifier: GPL-2.0-or-later
/* scrub.c — mask the values aisb passed in wherever the session wrote them (home, state) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ns/scrub.h"
#include "util/log.h"
#include "util/util.h"

#define SCRUB_CHUNK ((size_t)1 << 20)
/* ctime is set from the coarse clock (a jiffy behind CLOCK_REALTIME): a file written in the
 * session's first milliseconds could look older than its start */
#define SCRUB_SINCE_SLACK_SEC 2
#define SCRUB_REPORT_LINES 20
#define SCRUB_MAX_MARKS 1000

static const char mask_pattern[] = "REDACTED";

void scrub_mask(char *out, size_t len)
{
	for (size_t i = 0; i < len; i++)
		out[i] = mask_pattern[i % (sizeof(mask_pattern) - 1)];
}

size_t scrub_needles(const struct aisb_plan *p, struct scrub_needle *out, size_t *n_short)
{
	size_t n = 0;

	*n_short = 0;
	for (size_t i = 0; i < p->n_env; i++) {
		const struct plan_env *e = &p->env[i];
		size_t len = e->value ? strlen(e->value) : 0, j;

		if (!e->secret || !len)
			continue;
		if (len < SCRUB_MIN_LEN) {
			(*n_short)++;
			continue;
		}
		for (j = 0; j < n; j++)
			if (out[j].len == len && memcmp(out[j].value, e->value, len) == 0)
				break;
		if (j == n) {
			if (n == SCRUB_MAX_NEEDLES)
				continue; /* counted by the caller's check of p->n_env: SANDBOX_ENV_MAX */
			out[n] = (struct scrub_needle){ .value = e->value, .len = len, .placeholder = true };
			n++;
		}
		out[j].placeholder = out[j].placeholder && e->placeholder;
		{
			size_t k = strlen(out[j].names);
			snprintf(out[j].names + k, sizeof(out[j].names) - k, "%s$%s", k ? ", " : "", e->name);
		}
	}
	/* longest first: a value that contains another one is masked whole and named as itself */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && out[j].len > out[j - 1].len; j--) {
			struct scrub_needle t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

size_t scrub_buffer(char *buf, size_t n, const struct scrub_needle *nd, size_t n_nd, uint64_t *found)
{
	size_t hits = 0;

	for (size_t i = 0; i < n_nd; i++) {
		char *at = buf, *end = buf + n;

		while ((size_t)(end - at) >= nd[i].len && (at = memmem(at, (size_t)(end - at), nd[i].value, nd[i].len))) {
			scrub_mask(at, nd[i].len);
			at += nd[i].len;
			*found |= UINT64_C(1) << i;
			hits++;
		}
	}
	return hits;
}

void scrub_report_free(struct scrub_report *rep)
{
	for (size_t i = 0; i < rep->n_files; i++)
		free(rep->files[i].path);
	free(rep->files);
	free(rep->stopped_at);
	*rep = (struct scrub_report){ 0 };
}

/* ---- the walk ------------------------------------------------------------------------------ */

struct walk {
	const struct scrub_needle *nd;
	size_t n_nd, maxlen;
	const struct timespec *since;
	struct scrub_report *rep;
	dev_t dev;
	char *buf;
	bool stop;
};

static void walk_stop(struct walk *w, const char *rel, const char *why)
{
	w->stop = true;
	w->rep->stopped_at = strdup(rel);
	w->rep->stop_why = why;
}

static struct scrub_file *add_file(struct walk *w, const char *rel)
{
	struct scrub_file *v = realloc(w->rep->files, (w->rep->n_files + 1) * sizeof(*v));

	if (!v)
		return NULL;
	w->rep->files = v;
	v += w->rep->n_files;
	*v = (struct scrub_file){ .path = strdup(rel) };
	if (!v->path)
		return NULL;
	w->rep->n_files++;
	return v;
}

static bool is_changed(const struct walk *w, const struct stat *st)
{
	if (!w->since)
		return true;
	/* ctime, not mtime: the sandbox can set a file's mtime (touch -d), never its ctime; a
	 * rename, link or chmod sets it too */
	return st->st_ctim.tv_sec >= w->since->tv_sec - SCRUB_SINCE_SLACK_SEC;
}

/* One pass over @rfd in chunks that overlap by the longest needle less one byte, so a value
 * across a chunk boundary is found. With @wfd >= 0 every chunk that held a value is written back
 * masked. @count: add what was read to the byte budget (the first pass). Return: 0, -E2BIG when
 * the budget ran out, or -errno. */
static int scan_pass(struct walk *w, int rfd, int wfd, bool count, uint64_t *found)
{
	size_t keep = w->maxlen - 1, have = 0;
	off_t off = 0;

	for (;;) {
		ssize_t k = pread(rfd, w->buf + have, SCRUB_CHUNK, off + (off_t)have);
		uint64_t f = 0;

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return 0;
		have += (size_t)k;
		if (scrub_buffer(w->buf, have, w->nd, w->n_nd, &f) && wfd >= 0) {
			for (size_t done = 0; done < have;) {
				ssize_t m = pwrite(wfd, w->buf + done, have - done, off + (off_t)done);
				if (m < 0 && errno == EINTR)
					continue;
				if (m <= 0)
					return m < 0 ? -errno : -EIO;
				done += (size_t)m;
			}
		}
		*found |= f;
		if (count && (w->rep->bytes += (uint64_t)k) > SCRUB_MAX_BYTES)
			return -E2BIG;
		if (have > keep) {
			memmove(w->buf, w->buf + have - keep, keep);
			off += (off_t)(have - keep);
			have = keep;
		}
	}
}

/* The same file (magic link, no name resolved again) opened for writing; a file the caller owns
 * without its write bit gets it for the moment. Return: the fd or -errno. */
static int reopen_rw(int fd, const struct stat *st)
{
	char p[64];
	int wfd;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	wfd = open(p, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (wfd >= 0 || errno != EACCES || st->st_uid != geteuid())
		return wfd >= 0 ? wfd : -errno;
	if (fchmod(fd, (st->st_mode & 07777) | S_IWUSR) < 0)
		return -EACCES;
	wfd = open(p, O_RDWR | O_CLOEXEC | O_NOCTTY);
	(void)fchmod(fd, st->st_mode & 07777);
	return wfd >= 0 ? wfd : -EACCES;
}

static void scan_file(struct walk *w, int dfd, const char *name, const char *rel, const struct stat *st)
{
	_cleanup_close_ int fd = -1, wfd = -1;
	struct scrub_file *f;
	uint64_t found = 0;
	struct stat fst;
	int r;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode) || fst.st_ino != st->st_ino)
		return; /* gone or swapped since the stat */
	r = scan_pass(w, fd, -1, true, &found);
	if (r == -E2BIG)
		walk_stop(w, rel, "more than 4 GiB of changed files");
	if (!found)
		return;
	/* masked even when it cannot be recorded (out of memory): the report is second */
	f = add_file(w, rel);
	if (f)
		f->needles = found;
	wfd = reopen_rw(fd, &fst);
	if (wfd >= 0) {
		found = 0;
		if (scan_pass(w, fd, wfd, false, &found) == 0 && fsync(wfd) == 0)
			return;
	}
	/* it cannot be rewritten (read-only for us, or the write failed): it must not stay */
	r = unlinkat(dfd, name, 0);
	if (f && r == 0)
		f->removed = true;
	else if (f)
		f->failed = true;
}

/* A value in an entry's name is replaced in the name (renamed next to it, never over another
 * entry). Return: the name to go on with (@name or @buf). */
static const char *scrub_name(struct walk *w, int dfd, const char *name, const char *rel_dir, char *buf, size_t n)
{
	uint64_t found = 0;
	struct scrub_file *f;
	_cleanup_free_ char *rel = NULL;

	snprintf(buf, n, "%s", name);
	if (!scrub_buffer(buf, strlen(buf), w->nd, w->n_nd, &found))
		return name;
	rel = *rel_dir ? path_join(rel_dir, buf) : strdup(buf);
	f = rel ? add_file(w, rel) : NULL;
	if (!f)
		return name;
	f->needles = found;
	f->renamed = true;
	if (renameat2(dfd, name, dfd, buf, RENAME_NOREPLACE) == 0)
		return buf;
	if (unlinkat(dfd, name, 0) == 0 || unlinkat(dfd, name, AT_REMOVEDIR) == 0)
		f->removed = true;
	else
		f->failed = true;
	return NULL;
}

static void walk_dir(struct walk *w, int dfd, const char *rel, unsigned depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return;
	}
	while (!w->stop && (de = readdir(d))) {
		char namebuf[NAME_MAX + 1];
		_cleanup_free_ char *crel = NULL;
		const char *name = de->d_name;
		struct stat st;

		if (streq(name, ".") || streq(name, ".."))
			continue;
		crel = *rel ? path_join(rel, name) : strdup(name);
		if (!crel)
			break;
		if (++w->rep->entries > SCRUB_MAX_ENTRIES) {
			walk_stop(w, crel, "more than 500000 entries");
			break;
		}
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != w->dev)
			continue; /* gone, or another mount: not this tree */
		/* a name is the inode's too: creating or renaming it set the entry's ctime */
		if (is_changed(w, &st) && !(name = scrub_name(w, dirfd(d), name, rel, namebuf, sizeof(namebuf))))
			continue; /* removed */
		if (name == namebuf) {
			free(crel);
			crel = *rel ? path_join(rel, name) : strdup(name);
			if (!crel)
				break;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub;
			if (depth + 1 > SCRUB_MAX_DEPTH) {
				walk_stop(w, crel, "more than 128 levels");
				break;
			}
			sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				walk_dir(w, sub, crel, depth + 1);
		} else if (S_ISREG(st.st_mode) && st.st_size > 0 && is_changed(w, &st))
			scan_file(w, dirfd(d), name, crel, &st);
	}
	closedir(d);
}

int scrub_tree(const char *root, const struct timespec *since, const struct scrub_needle *nd, size_t n_nd,
	       struct scrub_report *rep)
{
	struct walk w = { .nd = nd, .n_nd = n_nd, .since = since, .rep = rep, .maxlen = 1 };
	struct stat st;
	int fd;

	*rep = (struct scrub_report){ 0 };
	if (!n_nd)
		return 0;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : (rep->error = -errno);
	if (fstat(fd, &st) < 0) {
		rep->error = -errno;
		close(fd);
		return rep->error;
	}
	w.dev = st.st_dev;
	for (size_t i = 0; i < n_nd; i++)
		if (nd[i].len > w.maxlen)
			w.maxlen = nd[i].len;
	w.buf = malloc(SCRUB_CHUNK + w.maxlen);
	if (!w.buf) {
		close(fd);
		return (rep->error = -ENOMEM);
	}
	walk_dir(&w, fd, "", 0);
	free(w.buf);
	return 0;
}

/* ---- the supervisor's report ------------------------------------------------------------- */

/* Paths are names the sandbox chose: anything but printable ASCII (a terminal's escape
 * sequences) and the quote are written as \xNN. */
static void escape(const char *s, char *out, size_t n)
{
	size_t k = 0;

	for (const unsigned char *c = (const unsigned char *)s; *c && k + 5 < n; c++) {
		if (*c < 0x20 || *c >= 0x7f || *c == '\'' || *c == '\\')
			k += (size_t)snprintf(out + k, n - k, "\\x%02x", *c);
		else
			out[k++] = (char)*c;
	}
	out[k] = 0;
}

/* The variables of the needles in @bits; a placeholder's as "the placeholder in $NAME". */
static void names_of(const struct scrub_needle *nd, size_t n_nd, uint64_t bits, char *out, size_t n)
{
	size_t k = 0;

	out[0] = 0;
	for (size_t i = 0; i < n_nd && k < n; i++)
		if (bits & (UINT64_C(1) << i))
			k += (size_t)snprintf(out + k, n - k, "%s%s%s", k ? ", " : "",
					      nd[i].placeholder ? "the placeholder in " : "", nd[i].names);
}

/* The bits of @n_nd needles that are --key-via-gate placeholders. */
static uint64_t placeholder_bits(const struct scrub_needle *nd, size_t n_nd)
{
	uint64_t b = 0;

	for (size_t i = 0; i < n_nd; i++)
		if (nd[i].placeholder)
			b |= UINT64_C(1) << i;
	return b;
}

static size_t report_tree(const char *what, const char *root, const struct scrub_report *rep,
			  const struct scrub_needle *nd, size_t n_nd)
{
	char path[1024], names[512], ph_names[512];
	uint64_t all = 0, ph;

	if (rep->error) {
		names_of(nd, n_nd, ~UINT64_C(0), names, sizeof(names));
		log_warn("cannot check %s '%s' for the passed-in values of %s: %s; it may hold them", what, root,
			 names, strerror(-rep->error));
		return 0;
	}
	if (rep->n_files) {
		for (size_t i = 0; i < rep->n_files; i++)
			all |= rep->files[i].needles;
		ph = all & placeholder_bits(nd, n_nd);
		names_of(nd, n_nd, all & ~ph, names, sizeof(names));
		names_of(nd, n_nd, ph, ph_names, sizeof(ph_names));
		if (all & ~ph)
			log_warn("the sandbox wrote the value of %s%s%s%s into %zu file%s of %s '%s'; every occurrence "
				 "was overwritten with 'REDACTED' (docs/agents.md, \"Secrets after the session\"):",
				 names, ph ? ", and " : "", ph_names, ph ? " (--key-via-gate: no key)" : "",
				 rep->n_files, rep->n_files == 1 ? "" : "s", what, root);
		else
			log_info("the sandbox wrote %s (--key-via-gate: no key, it worked with this session's gate "
				 "only) into %zu file%s of %s '%s'; overwritten with 'REDACTED' all the same, so no "
				 "stale placeholder stays (docs/agents.md, \"Secrets after the session\"):", ph_names,
				 rep->n_files, rep->n_files == 1 ? "" : "s", what, root);
		for (size_t i = 0; i < rep->n_files && i < SCRUB_REPORT_LINES; i++) {
			const struct scrub_file *f = &rep->files[i];
			escape(f->path, path, sizeof(path));
			names_of(nd, n_nd, f->needles, names, sizeof(names));
			fprintf(stderr, "aisb:   '%s' (%s)%s\n", path, names,
				f->failed    ? ": could be neither rewritten nor removed: remove it yourself" :
				f->removed   ? ": could not be rewritten, removed" :
				f->renamed   ? ": in its name, renamed" : "");
		}
		if (rep->n_files > SCRUB_REPORT_LINES)
			fprintf(stderr, "aisb:   and %zu more\n", rep->n_files - SCRUB_REPORT_LINES);
	}
	if (rep->stopped_at) {
		escape(rep->stopped_at, path, sizeof(path));
		names_of(nd, n_nd, ~UINT64_C(0), names, sizeof(names));
		log_warn("the check of %s '%s' for the passed-in values of %s stopped at '%s' (%s): what it did "
			 "not reach was not checked and may hold them", what, root, names, path, rep->stop_why);
	}
	return rep->n_files;
}

/* ---- the pending mark --------------------------------------------------------------------- */

/* One sandbox per supervisor: the mark this session holds locked until it was scrubbed. */
static int mark_fd = -1;
static char *mark_path;

static char *marks_dir(const struct aisb_plan *p, const struct aisb_session *ss)
{
	char *d = NULL;

	if (!ss->state_dir || !p->home_name || !ss->home_src)
		return NULL;
	return asprintf(&d, "%s/scrub/%s", ss->state_dir, p->home_name) < 0 ? NULL : d;
}

int scrub_begin(const struct aisb_plan *p, const struct aisb_session *ss, const struct timespec *since)
{
	struct scrub_needle nd[SCRUB_MAX_NEEDLES];
	_cleanup_free_ char *dir = marks_dir(p, ss);
	char line[64];
	size_t n_short;
	int fd, r;

	if (!dir || !ss->id || !scrub_needles(p, nd, &n_short))
		return 0;
	r = mkdir_p(dir, 0700);
	if (r < 0)
		return log_error_errno(r, "cannot create '%s' (the record of a pending check for passed-in values): %m",
				       dir);
	mark_path = path_join(dir, ss->id);
	if (!mark_path)
		return log_error_errno(-ENOMEM, "out of memory");
	fd = open(mark_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return log_error_errno(r, "cannot create '%s' (the record of a pending check for passed-in values): %m",
				       mark_path);
	}
	snprintf(line, sizeof(line), "start=%lld\n", (long long)since->tv_sec);
	if ((r = write_full(fd, line, strlen(line))) < 0) {
		close(fd);
		return log_error_errno(r, "cannot write '%s': %m", mark_path);
	}
	mark_fd = fd;
	return 0;
}

/* The marks of sessions on this home whose supervisor is gone (their lock is free): the oldest
 * start among them widens *@since; their names go to *@stale (removed once the home was checked
 * whole). Does not log. */
static size_t stale_marks(const char *dir, struct timespec *since, char ***stale)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	const char *own = mark_path ? strrchr(mark_path, '/') + 1 : "";
	size_t n = 0, seen = 0;
	struct dirent *de;
	DIR *d;

	if (dfd < 0)
		return 0;
	d = fdopendir(dfd); /* owns dfd from here on */
	if (!d) {
		close(dfd);
		return 0;
	}
	while ((de = readdir(d)) && seen++ < SCRUB_MAX_MARKS) {
		_cleanup_close_ int fd = -1;
		char buf[64] = "";
		long long start;

		if (de->d_name[0] == '.' || streq(de->d_name, own))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 || flock(fd, LOCK_SH | LOCK_NB) < 0)
			continue; /* a live session holds it: its own check is still to come */
		if (read(fd, buf, sizeof(buf) - 1) <= 0 || sscanf(buf, "start=%lld", &start) != 1)
			start = 0; /* unreadable: check every file */
		if (start < since->tv_sec)
			since->tv_sec = start;
		if (strv_push(stale, de->d_name) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static void marks_done(const char *dir, char **stale, bool complete)
{
	_cleanup_close_ int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;

	/* a check that stopped at a bound leaves this session's mark: the next session on the home
	 * checks again from its start */
	if (dfd >= 0 && complete) {
		for (size_t i = 0; stale && stale[i]; i++)
			(void)unlinkat(dfd, stale[i], 0);
		if (mark_path)
			(void)unlink(mark_path);
	}
	if (mark_fd >= 0)
		close(mark_fd);
	mark_fd = -1;
	free(mark_path);
	mark_path = NULL;
}

size_t scrub_session(const struct aisb_plan *p, const struct aisb_session *ss, const struct timespec *since)
{
	_cleanup_free_ char *dir = marks_dir(p, ss);
	_cleanup_strv_free_ char **stale = NULL;
	struct timespec home_since = *since;
	bool complete = true;
	struct scrub_needle nd[SCRUB_MAX_NEEDLES];
	size_t n_short, n, changed = 0;
	_cleanup_free_ char *quarantine = NULL;
	const struct {
		const char *what, *root;
		const struct timespec *since;
	} trees[] = {
		/* only what this session changed: the rest of a shared home is older sessions' */
		{ "the sandbox home", ss->home_src, &home_since },
		/* the session's own: all of it (egress log, a kept upper, an ephemeral home's files) */
		{ "the session dir", ss->dir, NULL },
		{ "the session's quarantine", NULL, NULL },
	};

	n = scrub_needles(p, nd, &n_short);
	if (!n) {
		marks_done(NULL, NULL, false);
		return 0;
	}
	if (dir && stale_marks(dir, &home_since, &stale))
		log_warn("%zu earlier session%s on the home '%s' ended without %s check for passed-in values (killed, "
			 "or failed before it): the files changed since %s started are checked for this run's values",
			 strv_length(stale), strv_length(stale) == 1 ? "" : "s", ss->home_src,
			 strv_length(stale) == 1 ? "its" : "their", strv_length(stale) == 1 ? "it" : "the first");
	if (ss->state_dir && ss->id && asprintf(&quarantine, "%s/quarantine/%s", ss->state_dir, ss->id) < 0)
		quarantine = NULL;
	for (size_t i = 0; i < ELEMENTSOF(trees); i++) {
		const char *root = i == 2 ? quarantine : trees[i].root;
		struct scrub_report rep;

		if (!root)
			continue;
		(void)scrub_tree(root, trees[i].since, nd, n, &rep);
		log_debug("scrub: %s '%s': %" PRIu64 " entries, %" PRIu64 " bytes read, %zu files changed", trees[i].what,
			  root, rep.entries, rep.bytes, rep.n_files);
		changed += report_tree(trees[i].what, root, &rep, nd, n);
		if (i == 0 && (rep.stopped_at || rep.error))
			complete = false;
		scrub_report_free(&rep);
	}
	marks_done(dir, stale, complete);
	return changed;
}

void scrub_describe(const struct aisb_plan *p, char *buf, size_t n)
{
	struct scrub_needle nd[SCRUB_MAX_NEEDLES];
	size_t n_short, n_nd = scrub_needles(p, nd, &n_short), k;
	char names[512];

	buf[0] = 0;
	if (!n_nd && !n_short)
		return;
	names_of(nd, n_nd, ~UINT64_C(0), names, sizeof(names));
	if (n_nd)
		k = (size_t)snprintf(buf, n, "after the session, the values of %s are searched in what the session "
				     "changed (the home's files, the session dir) and overwritten", names);
	else
		k = (size_t)snprintf(buf, n, "nothing is searched after the session");
	if (n_short && k < n)
		snprintf(buf + k, n - k, "; %zu value%s shorter than %d bytes %s not searched", n_short,
			 n_short == 1 ? "" : "s", SCRUB_MIN_LEN, n_short == 1 ? "is" : "are");
}
