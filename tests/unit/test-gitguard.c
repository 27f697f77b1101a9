// SPDX-License-Identifier: GPL-2.0-or-later
/* test-gitguard.c — git config syntax, command-valued keys, gitfiles, paths; the walk on a tree */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "git/gitguard.h"
#include "util/util.h"

static const struct {
	const char *text;
	int want;          /* 1 found, 0 none, -EINVAL */
	const char *key;   /* the first command key */
} configs[] = {
	{ "[core]\n\tfsmonitor = \"touch /tmp/pwned\"\n", 1, "core.fsmonitor" },
	{ "[CORE]\n\tFsMonitor = x\n", 1, "core.fsmonitor" },
	{ "[core] fsmonitor = x", 1, "core.fsmonitor" },              /* key after the header */
	{ "[core]\n\tbare = false\n\tfilemode = true\n", 0, "" },
	{ "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = x\n", 0, "" },
	{ "[remote \"origin\"]\n\tuploadpack = evil\n", 1, "remote.origin.uploadpack" },
	{ "[diff \"x\"]\n\ttextconv = cat\n", 1, "diff.x.textconv" },
	{ "[diff]\n\ttextconv = cat\n", 0, "" },                        /* needs a subsection */
	{ "[diff]\n\texternal = evil\n", 1, "diff.external" },
	{ "[filter \"lfs\"]\n\tprocess = git-lfs filter-process\n", 1, "filter.lfs.process" },
	{ "[filter.Lfs]\n\tsmudge = x\n", 1, "filter.lfs.smudge" },      /* legacy form, lower-cased */
	{ "[credential]\n\thelper = store\n", 1, "credential.helper" },
	{ "[credential \"https://x\"]\n\thelper = store\n", 1, "credential.https://x.helper" },
	{ "[include]\n\tpath = ../x\n", 1, "include.path" },
	{ "[includeIf \"gitdir:~/w/\"]\n\tpath = x\n", 1, "includeif.gitdir:~/w/.path" },
	{ "[pager]\n\tlog = evil\n", 1, "pager.log" },
	{ "[alias]\n\tst = -c core.pager=evil status\n", 1, "alias.st" },
	{ "[gpg \"ssh\"]\n\tdefaultKeyCommand = evil\n", 1, "gpg.ssh.defaultkeycommand" },
	{ "[core]\n\tsshCommand = evil\n", 1, "core.sshcommand" },
	{ "[core]\n\thooksPath = .githooks\n", 1, "core.hookspath" },
	{ "[extensions]\n\tworktreeConfig = true\n", 1, "extensions.worktreeconfig" },
	{ "# [core] fsmonitor = x\n; also\n[user]\n\tname = a # fsmonitor\n", 0, "" },
	{ "[user]\n\tname = \"a;b\" ; c\n[core]\n\tpager = less\n", 1, "core.pager" },
	{ "[user]\n\tname = a \\\n  b\n[core]\n\teditor = vi\n", 1, "core.editor" },
	{ "[core]\n\tfsmonitor\n", 1, "core.fsmonitor" },                /* bare boolean */
	{ "core.fsmonitor = x\n", -EINVAL, "" },                         /* no section */
	{ "[core\n\tfsmonitor = x\n", -EINVAL, "" },
	{ "[core]\n\tname = \"unterminated\n", -EINVAL, "" },
	{ "[core]\n\tname = \\q\n", -EINVAL, "" },
	{ "[core]\n\t1x = y\n", -EINVAL, "" },
	{ "[core]\n\tpager = a\n[oops\n", 1, "core.pager" },               /* seen before the error */
	{ "\xef\xbb\xbf[core]\r\n\tfsmonitor = x\r\n", 1, "core.fsmonitor" },
	{ "[sec \"a\\\"b\"]\n\tk = v\n[merge \"m\"]\n\tdriver = evil\n", 1, "merge.m.driver" },
	{ "", 0, "" },
};

static void test_config_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(configs); i++) {
		char key[128];
		int r = gitguard_config_first_command(configs[i].text, strlen(configs[i].text), key, sizeof(key));
		if (r != configs[i].want || (r == 1 && strcmp(key, configs[i].key) != 0))
			fail_msg("config %zu: got %d '%s', want %d '%s'", i, r, key, configs[i].want, configs[i].key);
	}
}

struct seen {
	char text[512];
};

static int collect(const char *section, const char *sub, const char *name, const char *value, void *ud)
{
	struct seen *s = ud;
	size_t n = strlen(s->text);
	snprintf(s->text + n, sizeof(s->text) - n, "%s|%s|%s|%s\n", section, sub ? sub : "-", name,
		 value ? value : "(null)");
	return 0;
}

static void test_config_values(void **state)
{
	struct seen s = { "" };
	const char *text = "[a \"Sub\\\\x\"]\n k = \"  q \" x  # c\n b\n[c.D]\nv=1\\t2\\n\n e = \"x\\\"y\"\n";
	(void)state;
	assert_int_equal(gitguard_config_parse(text, strlen(text), collect, &s), 0);
	assert_string_equal(s.text, "a|Sub\\x|k|  q  x\na|Sub\\x|b|(null)\nc|d|v|1\t2\n\nc|d|e|x\"y\n");
}

static void test_key_list(void **state)
{
	(void)state;
	assert_non_null(gitguard_key_is_command("core", NULL, "fsmonitor"));
	assert_null(gitguard_key_is_command("core", "x", "fsmonitor"));
	assert_null(gitguard_key_is_command("user", NULL, "name"));
	assert_null(gitguard_key_is_command("remote", "origin", "url"));
	assert_non_null(gitguard_key_is_command("gpg", NULL, "program"));
	assert_non_null(gitguard_key_is_command("gpg", "x509", "program"));
	assert_non_null(gitguard_key_is_command("hook", "lint", "command"));
	assert_non_null(gitguard_key_is_command("submodule", "s", "update"));
}

static void test_gitfile(void **state)
{
	char *p = NULL;
	(void)state;
	assert_int_equal(gitguard_parse_gitfile("gitdir: ../evil\n", 16, "gitdir:", &p), 0);
	assert_string_equal(p, "../evil");
	free(p);
	assert_int_equal(gitguard_parse_gitfile("gitdir:/abs/x  \r\n", 17, "gitdir:", &p), 0);
	assert_string_equal(p, "/abs/x");
	free(p);
	assert_int_equal(gitguard_parse_gitfile("../..\n", 6, NULL, &p), 0);
	assert_string_equal(p, "../..");
	free(p);
	assert_int_equal(gitguard_parse_gitfile("ref: x\n", 7, "gitdir:", &p), -EINVAL);
	assert_int_equal(gitguard_parse_gitfile("gitdir: \n", 9, "gitdir:", &p), -EINVAL);
	assert_int_equal(gitguard_parse_gitfile("", 0, NULL, &p), -EINVAL);
}

static void test_pointer_standard(void **state)
{
	(void)state;
	assert_true(gitguard_pointer_is_standard("sub/.git", ".git/modules/sub", false));
	assert_true(gitguard_pointer_is_standard("a/b/.git", "a/.git/modules/b", false));
	assert_true(gitguard_pointer_is_standard("wt/.git", ".git/worktrees/wt", false));
	assert_false(gitguard_pointer_is_standard("sub/.git", "evilsub", false));
	assert_false(gitguard_pointer_is_standard("sub/.git", NULL, false));
	assert_true(gitguard_pointer_is_standard(".git/worktrees/w/commondir", ".git", true));
	assert_true(gitguard_pointer_is_standard("worktrees/w/commondir", "", true));
	assert_false(gitguard_pointer_is_standard(".git/commondir", "evil", true));
	assert_false(gitguard_pointer_is_standard(".git/worktrees/w/commondir", "evil", true));
	assert_false(gitguard_pointer_is_standard(".git/worktrees/w/x/commondir", ".git", true));
	assert_false(gitguard_pointer_is_standard("x.git/myworktrees/w/commondir", "x.git/my", true));
}

static void test_path_below(void **state)
{
	static const struct {
		const char *base, *path, *want; /* want NULL: -EXDEV */
	} t[] = {
		{ "sub", "../evilsub", "evilsub" },
		{ ".git", "../evil", "evil" },
		{ ".git/worktrees/w", "../..", ".git" },
		{ "", "..", NULL },
		{ "a", "../../x", NULL },
		{ "a", "/home/u/proj/b/c", "b/c" },
		{ "a", "/home/u/projx", NULL },
		{ "a", "/home/u/proj", "" },
		{ "a/b", "./c//d/", "a/b/c/d" },
	};
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		char *out = NULL;
		int r = gitguard_path_below("/home/u/proj", t[i].base, t[i].path, &out);
		if (!t[i].want) {
			if (r != -EXDEV)
				fail_msg("path %zu: got %d '%s', want -EXDEV", i, r, out ? out : "");
		} else if (r != 0 || strcmp(out, t[i].want) != 0)
			fail_msg("path %zu: got %d '%s', want '%s'", i, r, out ? out : "", t[i].want);
		free(out);
	}
}

/* ---- the walk on a real tree ---- */

static char tmp[256];

static void put(const char *rel, const char *text)
{
	char path[1024];
	char *slash;
	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	slash = strrchr(path, '/');
	*slash = 0;
	assert_int_equal(mkdir_p(path, 0755), 0);
	*slash = '/';
	assert_int_equal(write_file_at(AT_FDCWD, path, text, strlen(text), 0755), 0);
}

static bool exists(const char *rel)
{
	char path[1024];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	return lstat(path, &st) == 0;
}

static const struct gitguard_finding *find(const struct gitguard_report *rep, const char *rel)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	for (size_t i = 0; i < rep->n; i++)
		if (streq(rep->v[i].path, path))
			return &rep->v[i];
	return NULL;
}

/* A fresh <tmp>/proj as the root (tmp then names it, for put()), <tmp>/q as the quarantine. */
static void make_root(char *root, size_t rootlen, char *q, size_t qlen)
{
	char *real;
	snprintf(tmp, sizeof(tmp), "/tmp/test-gitguard.XXXXXX");
	assert_non_null(mkdtemp(tmp));
	real = realpath(tmp, NULL);
	assert_non_null(real);
	snprintf(root, rootlen, "%s/proj", real);
	free(real);
	snprintf(tmp, sizeof(tmp), "%s", root);
	snprintf(q, qlen, "%s/../q", root);
}

static void test_walk(void **state)
{
	char q[300], root[200];
	char pc[] = ".git/config", ph[] = ".git/hooks";
	char *pinned[] = { pc, ph, NULL };
	struct gitguard_report rep = { 0 };
	struct gitguard_options o = { .pinned = pinned, .quarantine = q };
	(void)state;

	make_root(root, sizeof(root), q, sizeof(q));
	o.root = root;

	/* the user's own, pinned: never judged, but its include is */
	put(".git/config", "[core]\n\tpager = less\n[include]\n\tpath = ../.gitconfig\n");
	put(".git/hooks/pre-commit", "evil");
	put(".gitconfig", "[core]\n\tfsmonitor = evil\n");
	/* planted */
	put(".git/commondir", "/elsewhere\n");
	put(".git/config.worktree", "[core]\n\tfsmonitor = evil\n");
	put(".git/objects/info/alternates", "/x\n");
	put("sub/.git", "gitdir: ../../outside\n");
	put("sub2/.git", "gitdir: ../evilsub\n");        /* not where git puts submodules */
	put("sub3/.git", "gitdir: ../.git/modules/sub3\n");  /* git submodule add: fine */
	put(".git/modules/sub3/config", "[core]\n\tbare = false\n");
	put("sub4/.git", "gitdir: ../evilsub\n");        /* a real submodule's gitfile, swapped */
	put(".git/modules/sub4/HEAD", "ref: refs/heads/master\n");
	put(".git/worktrees/w/commondir", "../..\n");   /* git worktree add: fine */
	put("evilsub/config", "[core]\n\tfsmonitor = evil\n");
	put("evilsub/hooks/post-checkout", "evil");
	put("nested/.git/config", "[core]\n\tbare = false\n");  /* a plain git init: fine */
	put("nested/.git/hooks/pre-commit.sample", "x");
	put("src/hooks/useAuth.js", "x");               /* a React hooks dir: not git's */
	put("notgit/config", "key: value\n");           /* not git syntax: git would refuse it */
	put("esc\033]0;x\007/.git/config", "[core]\n\tpager = x\n");  /* a name that drives terminals */
	{
		char l[1024];
		snprintf(l, sizeof(l), "%s/lnk/.git", root);
		put("lnk/f", "x");
		assert_int_equal(symlink("/somewhere", l), 0);
	}

	/* nothing changed since the future: nothing found */
	o.since.tv_sec = time(NULL) + 3600;
	assert_int_equal(gitguard_check(&o, &rep), 0);
	assert_int_equal(rep.n, 0);
	gitguard_report_free(&rep);

	o.since.tv_sec = time(NULL) - 5;
	assert_int_equal(gitguard_check(&o, &rep), 0);
	assert_non_null(find(&rep, ".git/commondir"));
	assert_non_null(find(&rep, ".git/config.worktree"));
	assert_non_null(find(&rep, ".git/objects/info/alternates"));
	assert_non_null(find(&rep, "sub/.git"));
	assert_non_null(find(&rep, "sub2/.git"));
	assert_null(find(&rep, "sub3/.git"));
	assert_non_null(find(&rep, "sub4/.git"));
	assert_non_null(strstr(find(&rep, "sub4/.git")->reason, "back in place"));
	assert_null(find(&rep, ".git/worktrees/w/commondir"));
	assert_non_null(find(&rep, "evilsub/config"));
	assert_non_null(find(&rep, "evilsub/hooks/post-checkout"));
	assert_non_null(find(&rep, ".gitconfig"));
	assert_non_null(find(&rep, "lnk/.git"));
	assert_null(find(&rep, ".git/config"));
	assert_null(find(&rep, ".git/hooks/pre-commit"));
	assert_null(find(&rep, "nested/.git/config"));
	assert_null(find(&rep, "src/hooks/useAuth.js"));
	assert_null(find(&rep, "notgit/config"));
	assert_int_equal(rep.n, 11);
	for (size_t i = 0; i < rep.n; i++) {
		assert_non_null(rep.v[i].moved_to);
		assert_int_equal(rep.v[i].err, 0);
	}
	assert_false(exists(".git/commondir"));
	assert_false(exists("evilsub/config"));
	assert_true(exists(".git/config"));
	assert_false(exists("sub2/.git"));
	assert_true(exists("sub3/.git"));
	{
		char p[1024], *buf = NULL;
		snprintf(p, sizeof(p), "%s/sub4/.git", root);
		assert_int_equal(read_file_at(AT_FDCWD, p, 4096, &buf, NULL), 0);
		assert_string_equal(buf, "gitdir: ../.git/modules/sub4\n");
		free(buf);
	}
	{
		char p[1024];
		struct stat st;
		snprintf(p, sizeof(p), "%s/.git/commondir", q);
		assert_int_equal(lstat(p, &st), 0);
		snprintf(p, sizeof(p), "%s/MANIFEST", q);
		assert_int_equal(lstat(p, &st), -1);   /* written by the print, below */
	}
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_int_equal(gitguard_report_print(&rep, q, f), 11);
		fclose(f);
		assert_non_null(strstr(buf, "sets core.fsmonitor"));
		assert_non_null(strstr(buf, "MANIFEST"));
		assert_null(strchr(buf, '\033'));
		assert_non_null(strstr(buf, "esc\\x1b]0;x\\x07"));
		assert_non_null(strstr(buf, "restore, only if you trust it: mv"));
		free(buf);
	}
	gitguard_report_free(&rep);

	/* report-only (--writable-git): found, left in place */
	put(".git/commondir", "/elsewhere\n");
	o.quarantine = NULL;
	assert_int_equal(gitguard_check(&o, &rep), 0);
	assert_non_null(find(&rep, ".git/commondir"));
	assert_null(find(&rep, ".git/commondir")->moved_to);
	assert_true(exists(".git/commondir"));
	gitguard_report_free(&rep);
	*strrchr(root, '/') = 0;
	(void)rm_rf(root);
}

/* Staging: files written in one run (old by the next) moved into place in the next by renaming
 * their directory, whose ctime alone changes */
static void test_walk_staged(void **state)
{
	char q[300], root[200], a[1024], b[1024];
	char pc[] = ".git/config";
	char *pinned[] = { pc, NULL };
	struct gitguard_report rep = { 0 };
	struct gitguard_options o = { .pinned = pinned, .quarantine = q };
	(void)state;

	make_root(root, sizeof(root), q, sizeof(q));
	o.root = root;
	put(".git/config", "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../conf/team.inc\n");
	put("x/.git/stage/post-commit", "evil");
	put("x/.git/objects/stage/alternates", "/y\n");
	put("hstage/pre-push", "evil");
	put("cstage/team.inc", "[core]\n\tpager = evil\n");
	put("other/hooks/pre-commit", "old and unmoved");
	sleep(2);
	o.since.tv_sec = time(NULL);
#define MV(x, y)                                                                                   \
	do {                                                                                       \
		snprintf(a, sizeof(a), "%s/%s", root, x);                                          \
		snprintf(b, sizeof(b), "%s/%s", root, y);                                          \
		assert_int_equal(rename(a, b), 0);                                                 \
	} while (0)
	MV("x/.git/stage", "x/.git/hooks");
	MV("x/.git/objects/stage", "x/.git/objects/info");
	MV("hstage", ".githooks");
	MV("cstage", "conf");
#undef MV
	assert_int_equal(gitguard_check(&o, &rep), 0);
	assert_non_null(find(&rep, "x/.git/hooks/post-commit"));
	assert_non_null(find(&rep, "x/.git/objects/info/alternates"));
	assert_non_null(find(&rep, ".githooks/pre-push"));
	assert_non_null(find(&rep, "conf/team.inc"));
	assert_null(find(&rep, "other/hooks/pre-commit"));
	assert_int_equal(rep.n, 4);
	gitguard_report_free(&rep);
	*strrchr(root, '/') = 0;
	(void)rm_rf(root);
}

/* a read-write --mount of one file: judged as git config */
static void test_check_file(void **state)
{
	char q[300], root[200], file[300];
	struct gitguard_report rep = { 0 };
	struct gitguard_options o = { .quarantine = q, .root = file };
	(void)state;
	make_root(root, sizeof(root), q, sizeof(q));
	put(".gitconfig", "[core]\n\tfsmonitor = evil\n");
	put("data.json", "{\"core\": 1}\n");
	o.since.tv_sec = time(NULL) - 5;
	snprintf(file, sizeof(file), "%s/.gitconfig", root);
	assert_int_equal(gitguard_check_file(&o, &rep), 0);
	assert_non_null(find(&rep, ".gitconfig"));
	assert_false(exists(".gitconfig"));
	gitguard_report_free(&rep);
	snprintf(file, sizeof(file), "%s/data.json", root);     /* control: not git config */
	assert_int_equal(gitguard_check_file(&o, &rep), 0);
	assert_int_equal(rep.n, 0);
	assert_true(exists("data.json"));
	*strrchr(root, '/') = 0;
	(void)rm_rf(root);
}

/* openat_nofollow() and path_resolve_trusted(), which the pins, the walk and the mount-source
 * rule stand on */
static void test_nofollow(void **state)
{
	char dir[] = "/tmp/test-gitguard-nf.XXXXXX", p[512], *out = NULL, *bad = NULL;
	int fd;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/real/hooks", dir);
	assert_int_equal(mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/link", dir);
	assert_int_equal(symlink("real", p), 0);
	fd = openat_nofollow(AT_FDCWD, dir, O_PATH | O_DIRECTORY, 0);
	assert_true(fd >= 0);
	/* a symlink at the first, a middle or the last component: refused */
	assert_int_equal(openat_nofollow(fd, "link/hooks", O_PATH, 0), -ELOOP);
	assert_int_equal(openat_nofollow(fd, "link", O_PATH, 0), -ELOOP);
	snprintf(p, sizeof(p), "%s/link/hooks", dir);
	assert_int_equal(openat_nofollow(AT_FDCWD, p, O_PATH, 0), -ELOOP);
	/* below the dirfd only */
	assert_true(openat_nofollow(fd, "../", O_PATH, 0) < 0);
	/* control: the real path */
	{
		int h = openat_nofollow(fd, "real/hooks", O_PATH | O_DIRECTORY, 0);
		assert_true(h >= 0);
		close(h);
	}
	close(fd);

	/* the link sits in a directory the caller can write: never followed */
	snprintf(p, sizeof(p), "%s/link/hooks", dir);
	assert_int_equal(path_resolve_trusted(p, &out, &bad), -ELOOP);
	snprintf(p, sizeof(p), "%s/link", dir);
	assert_string_equal(bad, p);
	free(bad);
	/* control: the real path comes back canonical (./ and .. folded) */
	snprintf(p, sizeof(p), "%s/./real/../real/hooks/", dir);
	assert_int_equal(path_resolve_trusted(p, &out, &bad), 0);
	snprintf(p, sizeof(p), "%s/real/hooks", dir);
	assert_string_equal(out, p);
	free(out);
	/* a system link in a directory only root can write (/lib -> usr/lib): followed for an
	 * ordinary caller, refused for root */
	{
		struct stat st;
		if (lstat("/lib", &st) == 0 && S_ISLNK(st.st_mode)) {
			int r = path_resolve_trusted("/lib", &out, &bad);
			if (geteuid() == 0) {
				assert_int_equal(r, -ELOOP);
				free(bad);
			} else {
				assert_int_equal(r, 0);
				assert_string_equal(out, "/usr/lib");
				free(out);
			}
		}
	}
	assert_int_equal(rm_rf(dir), 0);
}


/* Issue 21: a bound, an unreadable directory or an error skips only the directory that hit it;
 * every sibling is judged; what was not judged is moved whole and named. */
static void test_walk_bounds(void **state)
{
	char q[300], root[200], path[4096];
	struct gitguard_report rep = { 0 };
	struct gitguard_options o = { .quarantine = q };
	size_t len;
	(void)state;

	make_root(root, sizeof(root), q, sizeof(q));
	o.root = root;
	o.since.tv_sec = time(NULL) - 5;

	/* a chain deeper than the bound (its first directory may come first in getdents order) */
	len = (size_t)snprintf(path, sizeof(path), "%s", root);
	for (int i = 0; i < GITGUARD_MAX_DEPTH + 2; i++) {
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/%c", i ? 'd' : 'a');
		assert_int_equal(mkdir_p(path, 0755), 0);
	}
	put(".git/commondir", "../evil\n");
	put("evil/config", "[core]\n\tfsmonitor = evil\n");
	put("zz/.git", "gitdir: ../evil\n");
	/* x made unreadable (0311), with a repository the user's git enters through the search bit */
	put("x/zsub/.git/config", "[core]\n\tfsmonitor = evil\n");
	snprintf(path, sizeof(path), "%s/x", root);
	assert_int_equal(chmod(path, 0311), 0);

	assert_int_equal(gitguard_check(&o, &rep), 0);
	assert_non_null(find(&rep, ".git/commondir"));
	assert_non_null(find(&rep, "evil/config"));
	assert_non_null(find(&rep, "zz/.git"));
	assert_non_null(find(&rep, "x/zsub/.git/config"));
	assert_true(rep.incomplete);
	assert_int_equal(rep.n_unjudged, 1);
	if (geteuid() != 0)
		assert_int_equal(rep.n_opened, 1);
	{
		struct stat st;
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0311);   /* put back */
	}
	{
		/* the one unjudged: the directory at the bound, moved whole; its parents stay */
		const struct gitguard_finding *f = NULL;
		for (size_t i = 0; i < rep.n; i++)
			if (rep.v[i].unjudged)
				f = &rep.v[i];
		assert_non_null(f);
		assert_non_null(f->moved_to);
		assert_non_null(strstr(f->reason, "levels"));
		assert_int_equal(strlen(f->path), strlen(root) + 2 * (GITGUARD_MAX_DEPTH + 1));
	}
	{
		char *buf = NULL;
		size_t blen = 0;
		FILE *f = open_memstream(&buf, &blen);
		gitguard_report_print(&rep, q, f);
		fclose(f);
		assert_non_null(strstr(buf, "1 directory could not be checked for planted git files"));
		free(buf);
	}
	gitguard_report_free(&rep);
	assert_int_equal(chmod(path, 0755), 0);

	/* the entries bound: what was not walked when it was reached is moved; .git is walked first
	 * (the root then holds .git evil zz x flood later: 6 entries, .git one more) */
	snprintf(path, sizeof(path), "%s/a", root);
	assert_int_equal(rm_rf(path), 0);
	put("flood/a", "x");
	put("flood/b", "x");
	put("flood/c", "x");
	put("later/.git", "gitdir: ../evil2\n");
	put(".git/config.worktree", "[core]\n\tfsmonitor = evil\n");
	o.max_entries = 8;
	assert_int_equal(gitguard_check(&o, &rep), 0);
	assert_non_null(find(&rep, ".git/config.worktree"));
	assert_true(rep.incomplete);
	assert_true(rep.n_unjudged >= 1);
	assert_false(exists("later/.git"));
	assert_false(exists("flood"));
	gitguard_report_free(&rep);

	*strrchr(root, '/') = 0;
	(void)rm_rf(root);
}

/* Issue 21: every command printed for pasting is one shell word, whatever the path's bytes. */
static void test_print_quoting(void **state)
{
	struct gitguard_finding v[] = {
		{ .path = (char *)"/p/q';id>F;'/.git/config", .moved_to = (char *)"/q/it's", .reason = (char *)"r" },
		{ .path = (char *)"/p/a\nb$(id)\001/.git", .moved_to = (char *)"/q/x", .reason = (char *)"r" },
	};
	struct gitguard_report rep = { .v = v, .n = 2 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	(void)state;

	gitguard_report_print(&rep, NULL, f);
	fclose(f);
	assert_non_null(strstr(buf, "mv '/q/it'\\''s' '/p/q'\\'';id>F;'\\''/.git/config')"));
	assert_non_null(strstr(buf, "mv '/q/x' $'/p/a\\x0ab$(id)\\x01/.git')"));
	assert_null(strchr(buf, '\001'));
	free(buf);
}


/* Issue 21: a recorded check whose owner is gone runs from its record; a live owner's is left;
 * the record's file is reused (no block freed), never read under another session's name. */
static void test_pending(void **state)
{
	char q[300], root[200], dir[400], path[600];
	struct gitguard_job j = { 0 };
	struct gitguard_verdict v = { 0 };
	FILE *f;
	char *buf = NULL;
	size_t len = 0;
	pid_t dead;
	struct stat st;
	(void)state;

	make_root(root, sizeof(root), q, sizeof(q));
	snprintf(dir, sizeof(dir), "%s/../pending", root);
	put(".git/HEAD", "ref: refs/heads/main\n");
	j.id = strdup("0123abcd");
	j.since.tv_sec = time(NULL) - 5;
	j.pidns = gitguard_pidns();
	assert_int_equal(gitguard_job_add(&j, root, false, NULL, q), 0);

	/* owned by this live process: recorded, not run by another checker */
	j.owner = getpid();
	assert_int_equal(proc_start_time(getpid(), &j.owner_start), 0);
	assert_int_equal(gitguard_job_record(&j, dir), 0);
	put("sub/.git", "gitdir: ../evil\n");
	f = open_memstream(&buf, &len);
	assert_int_equal(gitguard_pending_run(dir, f, false, &v), 0);
	fclose(f);
	free(buf);
	buf = NULL;
	assert_true(exists("sub/.git"));

	/* owned by a process that is gone: run, said, retired */
	dead = fork();
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	j.owner = dead;
	/* recorded in another pid namespace: not judged from here */
	j.pidns++;
	assert_int_equal(gitguard_job_record(&j, dir), 0);
	f = open_memstream(&buf, &len);
	assert_int_equal(gitguard_pending_run(dir, f, false, &v), 0);
	fclose(f);
	assert_non_null(strstr(buf, "cannot be told from here"));   /* said, not dropped */
	free(buf);
	buf = NULL;
	assert_true(exists("sub/.git"));
	j.pidns--;
	assert_int_equal(gitguard_job_record(&j, dir), 0);
	snprintf(path, sizeof(path), "%s/0123abcd.json", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size % 4096, 0);  /* padded to whole blocks */
	assert_int_equal(st.st_mode & 0777, 0600);
	f = open_memstream(&buf, &len);
	assert_int_equal(gitguard_pending_run(dir, f, false, &v), 1);
	fclose(f);
	assert_non_null(strstr(buf, "session 0123abcd ended without its check"));
	assert_non_null(strstr(buf, "sub/.git"));
	free(buf);
	buf = NULL;
	assert_false(exists("sub/.git"));
	assert_true(v.found >= 1);
	assert_int_equal(stat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/.spare-0123abcd", dir);
	assert_int_equal(stat(path, &st), 0);   /* kept for the next record */

	/* the spare is reused: the next record takes it */
	free(j.id);
	j.id = strdup("4567ef");
	assert_int_equal(gitguard_job_record(&j, dir), 0);
	assert_int_equal(stat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/4567ef.json", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(gitguard_job_forget(&j, dir), 0);
	assert_int_equal(stat(path, &st), -1);

	/* a record under another session's name is not run */
	{
		char other[600];
		free(j.id);
		j.id = strdup("89ab");
		assert_int_equal(gitguard_job_record(&j, dir), 0);
		snprintf(path, sizeof(path), "%s/89ab.json", dir);
		snprintf(other, sizeof(other), "%s/cdef.json", dir);
		assert_int_equal(rename(path, other), 0);
		put("sub2/.git", "gitdir: ../evil\n");
		f = open_memstream(&buf, &len);
		(void)gitguard_pending_run(dir, f, false, &v);
		fclose(f);
		assert_non_null(strstr(buf, "cannot be read"));
		assert_non_null(strstr(buf, "rm '"));
		assert_non_null(strstr(buf, "/cdef.json'"));
		free(buf);
		assert_true(exists("sub2/.git"));
	}
	gitguard_job_free(&j);
	*strrchr(root, '/') = 0;
	(void)rm_rf(root);
}


/* Unreadable directories as an unprivileged caller (root drops to nobody in a child; skipped
 * otherwise): its own 000 directory is opened up and checked; another user's 0711 one, which it
 * can enter but not list, is moved whole; another user's 0700 one, which it cannot enter (nor
 * could a sandbox running as it), is left alone. */
static void test_walk_unreadable(void **state)
{
	char q[300], root[200], path[600];
	pid_t pid;
	int st;
	(void)state;

	if (geteuid() != 0)
		skip();
	make_root(root, sizeof(root), q, sizeof(q));
	put("mine/r/.git/config", "[core]\n\tfsmonitor = evil\n");
	put("theirs711/sub/.git/config", "[core]\n\tfsmonitor = evil\n");
	put("theirs700/data", "x");
	{
		/* the whole tree is nobody's but the two "theirs" directories */
		char cmd[4096];
		snprintf(cmd, sizeof(cmd), "chmod 755 '%s/..' && chown -R 65534:65534 '%s/..' && chown -R 0:0 '%s/theirs711' '%s/theirs700' "
			 "&& chmod 0711 '%s/theirs711' && chmod 0700 '%s/theirs700' && chmod 000 '%s/mine'", root, root, root, root,
			 root, root, root);
		assert_int_equal(WEXITSTATUS(system(cmd)), 0); /* NOLINT(cert-env33-c): a test's fixed command */
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gitguard_report rep = { 0 };
		struct gitguard_options o = { .root = root, .quarantine = q };
		const struct gitguard_finding *f;
		o.since.tv_sec = time(NULL) - 5;
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(10);
		if (gitguard_check(&o, &rep) < 0)
			_exit(11);
		if (!find(&rep, "mine/r/.git/config") || rep.n_opened != 1)
			_exit(12);
		if (!(f = find(&rep, "theirs711")) || !f->unjudged)
			_exit(13);
		if (find(&rep, "theirs700"))
			_exit(14);
		snprintf(path, sizeof(path), "%s/mine", root);
		{
			struct stat sb;
			if (stat(path, &sb) < 0 || (sb.st_mode & 07777) != 0)
				_exit(15);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	snprintf(path, sizeof(path), "%s/mine", root);
	(void)chmod(path, 0755);
	*strrchr(root, '/') = 0;
	(void)rm_rf(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_table),
		cmocka_unit_test(test_config_values),
		cmocka_unit_test(test_key_list),
		cmocka_unit_test(test_gitfile),
		cmocka_unit_test(test_pointer_standard),
		cmocka_unit_test(test_path_below),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_walk_staged),
		cmocka_unit_test(test_walk_bounds),
		cmocka_unit_test(test_walk_unreadable),
		cmocka_unit_test(test_print_quoting),
		cmocka_unit_test(test_pending),
		cmocka_unit_test(test_check_file),
		cmocka_unit_test(test_nofollow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
