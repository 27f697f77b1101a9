// SPDX-License-Identifier: GPL-2.0-or-later
/* gitguard.c — the post-run walk: find what a sandbox changed that a host git would use, move it
 * into quarantine, report it.
 *
 * One pass over the tree judges every entry whose NAME makes it special to git, where its ctime
 * says it changed during the run:
 *   .git                     a symlink, or a gitfile whose target leaves the root (git follows it
 *                            to a config, hooks and objects nobody checked)
 *   commondir                whose target leaves the root (the same, for linked worktrees)
 *   config, config.worktree  git config that sets a command-valued key (gitguard_key_is_command())
 *                            or that git cannot parse
 *   hooks/<hook name>        a hook
 *   info/alternates, info/http-alternates
 *                            another object store
 * A symlink of any of these names that changed is moved too (git would follow it). Judging by
 * name everywhere, not only inside today's gitdirs, is what defeats staging: a directory
 * prepared in one run and turned into a gitdir in the next (by a gitfile, a commondir or a
 * rename) holds files that were judged in the run that wrote them; the pointer, or the renamed
 * entry, is new in the run that uses it. Configs that did not change (the user's, the pinned
 * .git/config) are still read for the files they include and for core.hooksPath, which are
 * judged afterwards wherever they are below the root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "git/gitguard.h"
#include "util/strbuf.h"
#include "util/util.h"

/* githooks(5), git 2.39 and later */
static const char *const hook_names[] = {
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
	"pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
	"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
	"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist",
	"p4-pre-submit", "post-index-change",
};

#define GG_STR_(x) #x
#define GG_STR(x) GG_STR_(x)
#define MAX_EXTRA 4096           /* include targets and hooksPath dirs judged after the walk */
#define MAX_QUARANTINE_COPY (64u << 20)

struct gg {
	const struct gitguard_options *o;
	struct gitguard_report *rep;
	int rootfd, qfd;
	size_t entries;
	bool exhausted;     /* GITGUARD_MAX_ENTRIES reached: every directory not walked yet is unjudged */
	bool unjudged_name; /* quarantine(): the in-place fallback name is NAME.aisb-unchecked */
	size_t extra_dropped;
	char **includes;  /* root-relative config files to judge after the walk */
	char **hookdirs;  /* root-relative hooks directories (core.hooksPath) */
	char buf[64 * 1024] __attribute__((aligned(8))); /* getdents64, reused per directory */
};

static bool is_hook_name(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(hook_names); i++)
		if (streq(hook_names[i], name))
			return true;
	return false;
}

static bool is_fresh(const struct gg *g, const struct stat *st)
{
	return st->st_ctim.tv_sec >= g->o->since.tv_sec;
}

static bool is_pinned(const struct gg *g, const char *rel)
{
	for (size_t i = 0; g->o->pinned && g->o->pinned[i]; i++) {
		const char *p = g->o->pinned[i];
		size_t n = strlen(p);
		if (strncmp(rel, p, n) == 0 && (rel[n] == 0 || rel[n] == '/'))
			return true;
	}
	return false;
}

static char *rel_join(const char *dir, const char *name)
{
	char *r;
	if (!*dir)
		return strdup(name);
	return asprintf(&r, "%s/%s", dir, name) < 0 ? NULL : r;
}

static char *host_path(const struct gg *g, const char *rel)
{
	char *r;
	if (!*rel)
		return strdup(g->o->root);
	return asprintf(&r, "%s%s%s", g->o->root, streq(g->o->root, "/") ? "" : "/", rel) < 0 ? NULL : r;
}

/* Opens (creating) the quarantine directory, then @rel's parent below it. */
static int quarantine_parent(struct gg *g, const char *rel, const char **base)
{
	_cleanup_free_ char *copy = strdup(rel);
	_cleanup_close_ int cur = -1;
	char *slash, *comp, *next;

	if (!copy)
		return -ENOMEM;
	if (g->qfd < 0) {
		int r = mkdir_p(g->o->quarantine, 0700);
		if (r < 0)
			return r;
		g->qfd = openat_nofollow(AT_FDCWD, g->o->quarantine, O_RDONLY | O_DIRECTORY, 0);
		if (g->qfd < 0)
			return g->qfd;
	}
	cur = fcntl(g->qfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return -errno;
	slash = strrchr(copy, '/');
	*base = slash ? rel + (slash - copy) + 1 : rel;
	if (!slash)
		return TAKE_FD(cur);
	*slash = 0;
	for (comp = copy; comp; comp = next) {
		int fd;
		next = strchr(comp, '/');
		if (next)
			*next++ = 0;
		if (mkdirat(cur, comp, 0700) < 0 && errno != EEXIST)
			return -errno;
		fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		close(cur);
		cur = fd;
	}
	return TAKE_FD(cur);
}

/* Copies a regular file or a symlink @name of @dirfd to @name2 of @qdir (across filesystems). */
static int copy_entry(int dirfd, const char *name, int qdir, const char *name2)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = 0;
		return symlinkat(target, qdir, name2) < 0 ? -errno : 0;
	}
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_QUARANTINE_COPY)
		return -EXDEV;
	{
		_cleanup_free_ char *data = NULL;
		size_t len = 0;
		_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		char fdpath[64];
		int r;
		if (fd < 0)
			return -errno;
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		r = read_file_at(AT_FDCWD, fdpath, MAX_QUARANTINE_COPY, &data, &len);
		if (r < 0)
			return r;
		return write_file_at(qdir, name2, data ? data : "", len, st.st_mode & 0700);
	}
}

/* Moves entry @name of @dirfd (root-relative @rel) out of git's reach: into the quarantine
 * (rename, or copy and unlink across filesystems), else renamed in place to a name git never
 * reads. Fills @f->moved_to or @f->err. */
static void quarantine(struct gg *g, int dirfd, const char *name, const char *rel, struct gitguard_finding *f)
{
	_cleanup_close_ int qdir = -1;
	char name2[NAME_MAX + 1];
	const char *base = NULL;
	int r = 0;

	qdir = quarantine_parent(g, rel, &base);
	if (qdir >= 0) {
		snprintf(name2, sizeof(name2), "%s", base);
		for (unsigned i = 1; i < 100 && faccessat(qdir, name2, F_OK, AT_SYMLINK_NOFOLLOW) == 0; i++)
			snprintf(name2, sizeof(name2), "%.200s.%u", base, i);
		if (renameat(dirfd, name, qdir, name2) == 0)
			r = 0;
		else if (errno == EXDEV && (r = copy_entry(dirfd, name, qdir, name2)) == 0)
			r = unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
		else
			r = r ? r : -errno;
		if (r == 0) {
			_cleanup_free_ char *qrel = NULL;
			const char *slash = strrchr(rel, '/');
			if (asprintf(&qrel, "%s/%.*s%s", g->o->quarantine, slash ? (int)(slash - rel + 1) : 0, rel,
				     name2) < 0)
				f->err = -ENOMEM;
			else
				f->moved_to = TAKE_PTR(qrel);
			return;
		}
	} else
		r = qdir;
	/* last resort: a name git does not read, in the same directory */
	snprintf(name2, sizeof(name2), "%.200s.%s", name, g->unjudged_name ? "aisb-unchecked" : "aisb-quarantined");
	if (renameat(dirfd, name, dirfd, name2) == 0) {
		_cleanup_free_ char *dir = NULL;
		const char *slash = strrchr(rel, '/');
		if (asprintf(&dir, "%.*s%s", slash ? (int)(slash - rel + 1) : 0, rel, name2) >= 0)
			f->moved_to = host_path(g, dir);
		return;
	}
	f->err = r < 0 ? r : -errno;
}

static struct gitguard_finding *finding(struct gg *g, int dirfd, const char *name, const char *rel,
					 const char *fmt, const char *arg)
{
	struct gitguard_finding x = { 0 }, *v;

	/* moved first: running out of memory for the report must not leave it in place */
	if (g->o->quarantine)
		quarantine(g, dirfd, name, rel, &x);
	x.path = host_path(g, rel);
	if (asprintf(&x.reason, fmt, arg) < 0)
		x.reason = NULL;
	v = realloc(g->rep->v, (g->rep->n + 1) * sizeof(*v));
	if (!v) {
		g->rep->lost++;
		free(x.path);
		free(x.reason);
		free(x.moved_to);
		return NULL;
	}
	g->rep->v = v;
	v[g->rep->n] = x;
	return &v[g->rep->n++];
}

/* What was there before, where it is known: a submodule checkout at @dirrel whose git dir
 * <root>/.git/modules/<dirrel> exists had the gitfile git writes for it (the submodule's name is
 * its path unless renamed). Written again after the planted one was moved. */
static void restore_submodule_gitfile(struct gg *g, int dirfd, const char *dirrel, struct gitguard_finding *f)
{
	_cleanup_free_ char *mod = NULL, *text = NULL, *reason = NULL;
	_cleanup_close_ int mfd = -1;
	struct strbuf up = { 0 };
	int r;

	if (!f || !f->moved_to || !*dirrel || asprintf(&mod, ".git/modules/%s", dirrel) < 0)
		return;
	mfd = openat_nofollow(g->rootfd, mod, O_PATH | O_DIRECTORY, 0);
	if (mfd < 0)
		return;
	for (const char *c = dirrel; c; c = strchr(c + 1, '/'))
		if (strbuf_puts(&up, "../") < 0) {
			free(up.p);
			return;
		}
	r = asprintf(&text, "gitdir: %s%s\n", up.p, mod);
	free(up.p);
	if (r < 0)
		return;
	{
		_cleanup_close_ int fd = openat(dirfd, ".git", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 || write_full(fd, text, strlen(text)) < 0)
			return;
	}
	if (asprintf(&reason, "%s; the gitfile git wrote for this submodule is back in place", f->reason) >= 0) {
		free(f->reason);
		f->reason = TAKE_PTR(reason);
	}
}

/* Reads a small file through an O_NOFOLLOW fd. */
static int read_small(int dirfd, const char *name, size_t max, char **out, size_t *len)
{
	return read_regular_at(dirfd, name, max, out, len, NULL);
}

/* The target of a pointer file (gitfile, commondir), root-relative; NULL when it leaves the root
 * or cannot be read. */
static char *pointer_target(struct gg *g, int dirfd, const char *name, const char *dirrel, const char *prefix)
{
	_cleanup_free_ char *data = NULL, *target = NULL;
	char *below = NULL;
	size_t len = 0;
	if (read_small(dirfd, name, 4096, &data, &len) < 0 || gitguard_parse_gitfile(data, len, prefix, &target) < 0 ||
	    gitguard_path_below(g->o->root, dirrel, target, &below) < 0)
		return NULL;
	return below;
}

/* What git itself writes: a gitfile into <repo>/.git/modules/ (submodules) or
 * <repo>/.git/worktrees/ (linked worktrees); a worktree's commondir back to its repository. */
bool gitguard_pointer_is_standard(const char *rel, const char *target, bool commondir)
{
	if (!target)
		return false;
	if (commondir) {
		/* <X>/worktrees/<n>/commondir -> <X> */
		const char *w = strstr(rel, "worktrees/");
		size_t xl;
		if (!w || (w != rel && w[-1] != '/'))
			return false;
		xl = w == rel ? 0 : (size_t)(w - rel - 1);
		if (strchr(w + 10, '/') != strrchr(rel, '/'))
			return false;
		return strlen(target) == xl && strncmp(target, rel, xl) == 0;
	}
	return (strncmp(target, ".git/modules/", 13) == 0 || strstr(target, "/.git/modules/") ||
		strncmp(target, ".git/worktrees/", 15) == 0 || strstr(target, "/.git/worktrees/"));
}

struct cfg_scan {
	struct gg *g;
	const char *dirrel;   /* where the config is: relative include paths start here */
	const char *worktree; /* its work tree (relative core.hooksPath starts here) */
	char key[128];
	const char *why;
};

static void add_extra(struct gg *g, char ***list, const char *dirrel, const char *path)
{
	_cleanup_free_ char *expanded = NULL, *below = NULL;
	if (strv_length(*list) >= MAX_EXTRA) {
		g->rep->incomplete = true; /* an include not judged: said, never silently */
		g->extra_dropped++;
		return;
	}
	if (strncmp(path, "~/", 2) == 0) {
		/* looked up only here: NSS costs a measurable part of a short run */
		const struct passwd *pw = g->o->home ? NULL : getpwuid(getuid());
		const char *home = g->o->home ? g->o->home : pw ? pw->pw_dir : NULL;
		if (!home || asprintf(&expanded, "%s/%s", home, path + 2) < 0)
			return;
		path = expanded;
	}
	/* a relative path in a config is relative to the directory of that config */
	if (gitguard_path_below(g->o->root, dirrel, path, &below) == 0 && !strv_contains(*list, below))
		(void)strv_push_take(list, TAKE_PTR(below));
}

static int cfg_fn(const char *section, const char *subsection, const char *name, const char *value, void *ud)
{
	struct cfg_scan *s = ud;
	const char *why = gitguard_key_is_command(section, subsection, name);
	if (!why)
		return 0;
	if (!s->why) {
		s->why = why;
		snprintf(s->key, sizeof(s->key), "%s%s%s.%s", section, subsection ? "." : "",
			 subsection ? subsection : "", name);
	}
	if (value && streq(name, "path") && (streq(section, "include") || streq(section, "includeif")))
		add_extra(s->g, &s->g->includes, s->dirrel, value);
	if (value && streq(section, "core") && streq(name, "hookspath"))
		add_extra(s->g, &s->g->hookdirs, s->worktree, value);
	return 0;
}

/* A file named config or config.worktree (or an included file): judged when it changed; its
 * include paths and core.hooksPath noted either way. */
static void judge_config(struct gg *g, int dirfd, const char *name, const char *dirrel, const char *rel,
			 const struct stat *st, bool taint)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_free_ char *wt = NULL;
	struct cfg_scan s = { .g = g, .dirrel = dirrel, .worktree = dirrel };
	bool judge = (is_fresh(g, st) || taint) && !is_pinned(g, rel);
	size_t len = 0;
	int r;

	if (S_ISLNK(st->st_mode)) {
		if (judge)
			finding(g, dirfd, name, rel, "%s: a symlink that git would follow for its config", name);
		return;
	}
	if (!S_ISREG(st->st_mode))
		return;
	r = read_small(dirfd, name, GITGUARD_MAX_CONFIG, &data, &len);
	if (r == -EFBIG) {
		if (judge)
			finding(g, dirfd, name, rel, "%s: larger than git config ever is, not read", "config");
		return;
	}
	if (r < 0) {
		/* unreadable is not unchecked: a git that can read it (root's) would run it */
		if (judge)
			finding(g, dirfd, name, rel, "%s: could not be read to check it", name);
		return;
	}
	/* <worktree>/.git/config: hooksPath is relative to <worktree> */
	{
		const char *slash = strrchr(dirrel, '/');
		const char *last = slash ? slash + 1 : dirrel;
		if (streq(last, ".git") && (wt = slash ? strndup(dirrel, (size_t)(slash - dirrel)) : strdup("")))
			s.worktree = wt;
	}
	r = gitguard_config_parse(data, len, cfg_fn, &s);
	if (!judge)
		return;
	/* A file git cannot parse makes git die before it runs anything ("bad config line"); the
	 * keys before the error were seen (s.why) and count like in any other file. */
	(void)r;
	if (s.why) {
		_cleanup_free_ char *msg = NULL;
		if (asprintf(&msg, "sets %s (%s)", s.key, s.why) >= 0)
			finding(g, dirfd, name, rel, "%s", msg);
	}
}

/* @dir_fresh: the directory holding the entry (a `hooks` or `info` dir) changed during the run:
 * it may have been renamed into place with its entries, whose own ctimes are then old (a
 * staged `stage/pre-commit` becoming `hooks/pre-commit` by `mv stage hooks`), so its entries
 * count as changed too. */
static void judge_entry(struct gg *g, int dirfd, const char *dirrel, const char *dirname, const char *name,
			unsigned char type, bool dir_fresh)
{
	_cleanup_free_ char *rel = NULL;
	struct stat st;
	bool special = streq(name, ".git") || streq(name, "commondir") || streq(name, "config") ||
		       streq(name, "config.worktree") || (streq(dirname, "hooks") && is_hook_name(name)) ||
		       (streq(dirname, "info") && (streq(name, "alternates") || streq(name, "http-alternates"))) ||
		       (type == DT_LNK && (streq(name, "hooks") || streq(name, "objects") || streq(name, "info") ||
					   streq(name, "modules") || streq(name, "worktrees")));

	if (!special || type == DT_DIR)
		return;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !(rel = rel_join(dirrel, name)))
		return;
	if (streq(name, "config") || streq(name, "config.worktree")) {
		judge_config(g, dirfd, name, dirrel, rel, &st, false);
		return;
	}
	if (!(is_fresh(g, &st) || dir_fresh) || is_pinned(g, rel))
		return;
	if (S_ISLNK(st.st_mode)) {
		finding(g, dirfd, name, rel, "%s: a symlink that git would follow", name);
		return;
	}
	if (S_ISDIR(st.st_mode))
		return;
	if (streq(name, ".git") || streq(name, "commondir")) {
		bool cd = streq(name, "commondir");
		_cleanup_free_ char *target = pointer_target(g, dirfd, name, dirrel, cd ? NULL : "gitdir:");
		struct gitguard_finding *f;
		if (gitguard_pointer_is_standard(rel, target, cd))
			return;
		f = finding(g, dirfd, name, rel, cd ? "%s: points git at another common directory (its config, "
						      "hooks and objects)"
						    : "%s: a gitfile that points git at another git directory (its "
						      "config and hooks)", name);
		if (!cd)
			restore_submodule_gitfile(g, dirfd, dirrel, f);
	} else if (streq(dirname, "hooks"))
		finding(g, dirfd, name, rel, "%s: a hook that git runs", name);
	else
		finding(g, dirfd, name, rel, "%s: adds an object store", name);
}

/* The kernel's record (getdents64(2)); read raw: no DIR stream, so no fstat and fcntl per
 * directory (measured: 40% of the syscalls of a walk through glibc's fdopendir/readdir). */
struct dirent64_raw {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* A directory that could not be judged (issue 21: "no subtree hides another"): anything could
 * be inside, so it goes whole where git does not look, like a planted file: into the quarantine,
 * else (another filesystem) renamed in place to NAME.aisb-unchecked and made mode 000 when it is
 * the caller's, so that neither a gitlink in the index nor a plain `cd` finds a repository in it.
 * Its siblings are judged as usual; only it is named. */
static void unjudged(struct gg *g, int dirfd, const char *name, const char *rel, const char *why)
{
	struct gitguard_finding *f;
	char name2[NAME_MAX + 1];

	g->unjudged_name = true;
	f = finding(g, dirfd, name, rel, "%s", why);
	g->unjudged_name = false;
	if (!f) {
		g->rep->incomplete = true;
		return;
	}
	f->unjudged = true;
	g->rep->n_unjudged++;
	g->rep->incomplete = true;
	if (f->moved_to && g->o->quarantine && !path_startswith(f->moved_to, g->o->quarantine)) {
		/* renamed in place: shut it too */
		struct stat st;
		snprintf(name2, sizeof(name2), "%.200s.aisb-unchecked", name);
		if (fstatat(dirfd, name2, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
		    fchmodat(dirfd, name2, 0, 0) < 0)
			f->err = -errno; /* moved, but open: said with the finding */
	}
}

/* Opens subdirectory @name of @fd that the sandbox made unreadable (EACCES), when it is the
 * caller's: its mode gains u+rx for the walk (*@mode_back: what to put back, through *@pfd).
 * Return: the O_RDONLY fd, or -errno. Does not log. */
static int open_unreadable(int fd, const char *name, int *pfd, mode_t *mode_back)
{
	char fdpath[64];
	struct stat st;
	int cfd;

	*pfd = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*pfd < 0)
		return -errno;
	if (fstat(*pfd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid())
		return -EACCES;
	/* chmod through the O_PATH fd (fchmod refuses one): the name is not resolved again */
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", *pfd);
	if (chmod(fdpath, (st.st_mode & 07777) | 0500) < 0)
		return -errno;
	*mode_back = st.st_mode & 07777;
	cfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cfd < 0) {
		int e = -errno;
		(void)chmod(fdpath, *mode_back);
		return e;
	}
	return cfd;
}

static void mode_back(int pfd, mode_t mode)
{
	char fdpath[64];
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", pfd);
	(void)chmod(fdpath, mode);
}

/* Walks the directory @dfd (an O_RDONLY fd, taken over): judges its entries, then descends,
 * `.git` first. Return: NULL when every entry was judged (a subdirectory that could not be is
 * already dealt with here), else why this directory could not be judged: the caller moves it. */
static const char *walk(struct gg *g, int dfd, const char *rel, const char *dirname, bool dir_fresh, unsigned depth)
{
	_cleanup_strv_free_ char **subdirs = NULL;
	_cleanup_close_ int fd = dfd;
	size_t here = 0;
	long n;

	if (g->exhausted)
		return "not checked: the check's bound of " GG_STR(GITGUARD_MAX_ENTRIES) " entries was reached before it";
	while ((n = syscall(SYS_getdents64, fd, g->buf, sizeof(g->buf))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64_raw *de = (struct dirent64_raw *)(void *)(g->buf + off);
			unsigned char type = de->d_type;
			off += de->d_reclen;
			if (streq(de->d_name, ".") || streq(de->d_name, ".."))
				continue;
			if (++g->entries > (g->o->max_entries ? g->o->max_entries : GITGUARD_MAX_ENTRIES)) {
				g->exhausted = true;
				return "not checked whole: the check's bound of " GG_STR(GITGUARD_MAX_ENTRIES)
				       " entries was reached in it";
			}
			if (++here > GITGUARD_MAX_DIR_ENTRIES)
				return "not checked: more than " GG_STR(GITGUARD_MAX_DIR_ENTRIES) " entries in one directory";
			if (type == DT_UNKNOWN) {
				struct stat st;
				if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
					return "not checked: an entry in it could not be examined";
				type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
			}
			judge_entry(g, fd, rel, dirname, de->d_name, type, dir_fresh);
			if (type == DT_DIR && strv_push(&subdirs, de->d_name) < 0)
				return "not checked: out of memory";
		}
	}
	if (n < 0)
		return "not checked: it could not be read to the end";
	/* `.git` first: a flood elsewhere must not leave the repository itself unwalked */
	for (size_t i = 0; subdirs && subdirs[i]; i++)
		if (streq(subdirs[i], ".git")) {
			char *t = subdirs[i];
			subdirs[i] = subdirs[0];
			subdirs[0] = t;
			break;
		}
	for (size_t i = 0; subdirs && subdirs[i]; i++) {
		_cleanup_free_ char *child = rel_join(rel, subdirs[i]);
		_cleanup_close_ int pfd = -1;
		const char *why = NULL;
		mode_t back = 0;
		int cfd;

		if (!child) {
			g->rep->incomplete = true;
			g->rep->lost++;
			continue;
		}
		if (depth + 1 > GITGUARD_MAX_DEPTH) {
			unjudged(g, fd, subdirs[i], child, "not checked: more than " GG_STR(GITGUARD_MAX_DEPTH)
				 " levels below the project");
			continue;
		}
		cfd = openat(fd, subdirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0 && (errno == EACCES || errno == EPERM)) {
			/* made unreadable inside, where the user's git may still enter through the
			 * search bit: opened up for the walk, its mode put back after */
			cfd = open_unreadable(fd, subdirs[i], &pfd, &back);
			if (cfd >= 0)
				g->rep->n_opened++;
			else if (faccessat(fd, subdirs[i], X_OK, AT_EACCESS) < 0 && errno == EACCES)
				/* another user's, and not even searchable by the caller (a container's
				 * root-owned 0700 data dir): the sandbox, which runs as the caller, could
				 * not have written below it, nor could the caller's git enter it */
				continue;
			else
				why = "not checked: a directory that cannot be read (and is not yours to open up)";
		} else if (cfd < 0 && errno != ENOENT)
			why = "not checked: it could not be opened";
		if (cfd >= 0) {
			bool fresh = false;
			struct stat st;
			if ((streq(subdirs[i], "hooks") || streq(subdirs[i], "info")) && fstat(cfd, &st) == 0)
				fresh = is_fresh(g, &st) && !is_pinned(g, child);
			why = walk(g, cfd, child, subdirs[i], fresh, depth + 1);
		}
		if (pfd >= 0)
			mode_back(pfd, back);
		if (why)
			unjudged(g, fd, subdirs[i], child, why);
	}
	return NULL;
}

/* Splits root-relative @rel into its parent (opened without following links) and name. */
static int open_parent(struct gg *g, const char *rel, char **dirrel, const char **name)
{
	const char *slash = strrchr(rel, '/');
	*name = slash ? slash + 1 : rel;
	*dirrel = slash ? strndup(rel, (size_t)(slash - rel)) : strdup("");
	if (!*dirrel)
		return -ENOMEM;
	if (!**dirrel) {
		int fd = fcntl(g->rootfd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	return openat_nofollow(g->rootfd, *dirrel, O_PATH | O_DIRECTORY, 0);
}

/* Whether a directory on the way to @rel (below the root, @rel itself included when @self)
 * changed during the run: renamed into place, its old entries are the sandbox's too. */
static bool path_fresh(struct gg *g, const char *rel, bool self)
{
	_cleanup_free_ char *copy = strdup(rel);
	char *slash;
	if (!copy)
		return true;
	if (!self && !(slash = strrchr(copy, '/')))
		return false;
	if (!self)
		*slash = 0;
	for (;;) {
		struct stat st;
		_cleanup_close_ int fd = openat_nofollow(g->rootfd, copy, O_PATH, 0);
		if (fd >= 0 && fstat(fd, &st) == 0 && is_fresh(g, &st) && !is_pinned(g, copy))
			return true;
		if (!(slash = strrchr(copy, '/')))
			return false;
		*slash = 0;
	}
}

/* After the walk: included configs (whatever their names) and core.hooksPath directories. */
static void judge_extras(struct gg *g)
{
	for (size_t i = 0; g->includes && i < strv_length(g->includes) && i < MAX_EXTRA; i++) {
		_cleanup_free_ char *dirrel = NULL;
		_cleanup_close_ int pfd = -1;
		const char *name;
		struct stat st;
		pfd = open_parent(g, g->includes[i], &dirrel, &name);
		if (pfd >= 0 && *name && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			judge_config(g, pfd, name, dirrel, g->includes[i], &st, path_fresh(g, g->includes[i], false));
	}
	for (size_t i = 0; g->hookdirs && g->hookdirs[i]; i++) {
		_cleanup_close_ int hfd = *g->hookdirs[i]
			? openat_nofollow(g->rootfd, g->hookdirs[i], O_RDONLY | O_DIRECTORY, 0)
			: -1;
		bool taint = *g->hookdirs[i] && path_fresh(g, g->hookdirs[i], true);
		DIR *d;
		struct dirent *de;
		if (hfd < 0 || !(d = fdopendir(hfd)))
			continue;
		hfd = -1; /* owned by d; NOLINT(clang-analyzer-deadcode.DeadStores): read by its _cleanup_close_, which clang-analyzer does not model */
		while ((de = readdir(d))) {
			_cleanup_free_ char *rel = NULL;
			struct stat st;
			if (!is_hook_name(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !(is_fresh(g, &st) || taint) || !(rel = rel_join(g->hookdirs[i], de->d_name)) || is_pinned(g, rel) ||
			    S_ISDIR(st.st_mode))
				continue;
			finding(g, dirfd(d), de->d_name, rel, "%s: a hook that git runs (core.hooksPath)", de->d_name);
		}
		closedir(d);
	}
}

static void gg_done(struct gg *g)
{
	close(g->rootfd);
	if (g->qfd >= 0)
		close(g->qfd);
	strv_free(g->includes);
	strv_free(g->hookdirs);
}

/* The walk's state, with everything but the dirent buffer zeroed: calloc() would write all
 * 64 KiB, 16 page faults on every run's exit (measured with perf, issue 10's start-up cost), while
 * getdents64 touches only what it returns (one page for a small directory). */
static struct gg *gg_new(void)
{
	struct gg *g = malloc(sizeof(*g));

	if (g)
		memset(g, 0, offsetof(struct gg, buf));
	return g;
}

int gitguard_check(const struct gitguard_options *o, struct gitguard_report *rep)
{
	_cleanup_free_ struct gg *g = gg_new();
	int fd;

	if (!g)
		return -ENOMEM;
	g->o = o;
	g->rep = rep;
	g->qfd = -1;
	g->rootfd = openat_nofollow(AT_FDCWD, o->root, O_RDONLY | O_DIRECTORY, 0);
	if (g->rootfd < 0) {
		rep->incomplete = true;
		rep->root_err = g->rootfd;
		return g->rootfd;
	}
	fd = fcntl(g->rootfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || walk(g, fd, "", "", false, 0)) {
		/* the root itself: nothing to move it to, so the report says not to run git there */
		rep->incomplete = true;
		rep->root_err = fd < 0 ? -errno : -EIO;
	}
	judge_extras(g);
	gg_done(g);
	return 0;
}

int gitguard_check_file(const struct gitguard_options *o, struct gitguard_report *rep)
{
	_cleanup_free_ struct gg *g = gg_new();
	_cleanup_free_ char *dir = NULL;
	struct gitguard_options fo = *o;
	const char *slash = strrchr(o->root, '/');
	struct stat st;

	if (!g || !slash || !slash[1] || !(dir = strndup(o->root, slash > o->root ? (size_t)(slash - o->root) : 1)))
		return g && slash ? -ENOMEM : -EINVAL;
	fo.root = dir;
	fo.pinned = NULL;
	g->o = &fo;
	g->rep = rep;
	g->qfd = -1;
	g->rootfd = openat_nofollow(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
	if (g->rootfd < 0)
		return g->rootfd;
	if (fstatat(g->rootfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) == 0)
		judge_config(g, g->rootfd, slash + 1, "", slash + 1, &st, false);
	gg_done(g);
	return 0;
}

void gitguard_report_free(struct gitguard_report *rep)
{
	for (size_t i = 0; i < rep->n; i++) {
		free(rep->v[i].path);
		free(rep->v[i].moved_to);
		free(rep->v[i].reason);
	}
	free(rep->v);
	*rep = (struct gitguard_report){ 0 };
}

/* Paths come from names the sandbox chose: control bytes (a terminal's escape sequences) and
 * anything that is not printable ASCII are written as \xNN, so the message cannot drive the
 * user's terminal. */
static void put_path(FILE *f, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)(s ? s : "?"); *c; c++)
		if (*c < 0x20 || *c >= 0x7f || *c == '\\')
			fprintf(f, "\\x%02x", *c);
		else
			fputc(*c, f);
}

/* The list that the message shortens: <quarantine>/MANIFEST, original TAB now TAB reason. */
static void write_manifest(const struct gitguard_report *rep, const char *quarantine)
{
	_cleanup_free_ char *path = path_join(quarantine, "MANIFEST");
	_cleanup_fclose_ FILE *m = NULL;
	int fd;
	if (!path)
		return;
	fd = openat_nofollow(AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd < 0 || !(m = fdopen(fd, "a"))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (size_t i = 0; i < rep->n; i++) {
		put_path(m, rep->v[i].path);
		fputc('\t', m);
		put_path(m, rep->v[i].moved_to ? rep->v[i].moved_to : "(not moved)");
		fputc('\t', m);
		put_path(m, rep->v[i].reason);
		fputc('\n', m);
	}
}

#define PRINT_MAX 20 /* findings listed in the message; all of them are in MANIFEST */

/* A path as one word for the user's shell (strbuf.h: shell_word()); "''" if out of memory, so that
 * the line stays a command that does nothing rather than one that does something else. */
static void put_word(FILE *f, const char *s)
{
	_cleanup_free_ char *w = shell_word(s ? s : "?");
	fputs(w ? w : "''", f);
}

size_t gitguard_report_print(const struct gitguard_report *rep, const char *quarantine, FILE *f)
{
	size_t planted = rep->n - rep->n_unjudged, shown = 0;
	bool moved = false;

	for (size_t i = 0; i < rep->n; i++)
		moved |= rep->v[i].moved_to != NULL;
	if (planted)
		fprintf(f, "aisb: the sandbox changed %zu file%s that decide what git on this machine runs; "
			   "%s before any git could use %s:\n", planted, planted == 1 ? "" : "s",
			quarantine ? "moved out of the way" : "LEFT IN PLACE (--writable-git)",
			planted == 1 ? "it" : "them");
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1 && rep->n_unjudged)
			fprintf(f, "aisb: %zu director%s could not be checked for planted git files, so %s %s:\n",
				rep->n_unjudged, rep->n_unjudged == 1 ? "y" : "ies",
				rep->n_unjudged == 1 ? "it was" : "they were",
				quarantine ? "moved whole out of git's reach" : "LEFT IN PLACE (--writable-git): "
				"do not run git in or below them");
		for (size_t i = 0; i < rep->n; i++) {
			const struct gitguard_finding *x = &rep->v[i];
			if (x->unjudged != (pass == 1) || shown++ >= PRINT_MAX)
				continue;
			fputs("aisb:   '", f);
			put_path(f, x->path);
			fputs("': ", f);
			put_path(f, x->reason);
			fputc('\n', f);
			if (x->moved_to) {
				fputs("aisb:       now '", f);
				put_path(f, x->moved_to);
				fputs("' (restore, only if you trust it: mv ", f);
				put_word(f, x->moved_to);
				fputc(' ', f);
				put_word(f, x->path);
				fputs(")\n", f);
			} else if (x->err < 0)
				fprintf(f, "aisb:       COULD NOT BE MOVED (%s): remove it before you run git there\n",
					strerror(-x->err));
		}
	}
	if (rep->n > PRINT_MAX)
		fprintf(f, "aisb:   ... and %zu more\n", rep->n - PRINT_MAX);
	if (quarantine && moved) {
		write_manifest(rep, quarantine);
		fputs("aisb: the full list is in '", f);
		put_path(f, quarantine);
		fputs("/MANIFEST'; inspect with: ls -laR ", f);
		put_word(f, quarantine);
		fputc('\n', f);
	}
	if (rep->lost)
		fprintf(f, "aisb: warning: %zu more finding%s could not be listed (out of memory); run git there only "
			   "after checking it yourself\n", rep->lost, rep->lost == 1 ? "" : "s");
	if (rep->root_err < 0)
		fprintf(f, "aisb: WARNING: the tree could not be checked for planted git files at all (%s): do not run "
			   "git in it before you have checked its .git yourself\n", strerror(-rep->root_err));
	else if (rep->incomplete && !rep->n_unjudged && !rep->lost)
		fputs("aisb: WARNING: some files that git's configs include could not be checked (more than "
		      GG_STR(MAX_EXTRA) "); run git there only after checking its .git yourself\n", f);
	if (rep->n_opened)
		fprintf(f, "aisb: %zu director%s made unreadable inside %s opened up to be checked, and %s mode put "
			   "back\n", rep->n_opened, rep->n_opened == 1 ? "y" : "ies", rep->n_opened == 1 ? "was" : "were",
			rep->n_opened == 1 ? "its" : "their");
	return rep->n;
}
