// SPDX-License-Identifier: GPL-2.0-or-later
/* workspace.c — clone workspaces: resolve, prepare, import (validate, rebuild, publish), list, clean */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "util/log.h"
#include "util/util.h"
#include "git/gitrun.h"
#include "ns/scrub.h"
#include "workspace/workspace-internal.h"
#include "workspace/workspace.h"

#define UNTRACKED_MAX_FILES 100000
#define UNTRACKED_MAX_BYTES (2ull << 30) /* 2 GiB copied at most */
#define SANDBOX_IDENT_NAME "aisb sandbox"
#define SANDBOX_IDENT_EMAIL "sandbox@aisb.invalid"

/* The export, inside its own sandbox (the clone read-only, nothing else of the host, no network).
 * It only has to be right for an honest clone: whatever it writes is judged on the host. The
 * checkpoint commit is made with a scratch index and object dir under /tmp, so the clone is not
 * written. The bundle is made with pack-objects rather than `git bundle create`, whose pack is
 * thin (its deltas may lean on objects outside it); the host refuses a thin pack. */
const char workspace_export_script[] =
	"set -u\n"
	"base=$1 checkpoint=$2 onto=${3:-} out=" WORKSPACE_EXPORT_OUT "\n"
	"exec 2>\"$out/log\" </dev/null\n"
	"cd " WORKSPACE_EXPORT_REPO " || exit 3\n"
	"export GIT_OPTIONAL_LOCKS=0 GIT_TERMINAL_PROMPT=0 LC_ALL=C\n"
	"dirty=0\n"
	"tip=$(git rev-parse --verify -q 'HEAD^{commit}') || { tip=$base; dirty=1; }\n"
	/* a repository git cannot read counts as work left behind: the workspace is kept */
	"git status --porcelain >/tmp/aisb-status 2>/dev/null || dirty=1\n"
	"[ -s /tmp/aisb-status ] && dirty=1\n"
	"if [ \"$checkpoint\" = 1 ] && [ \"$dirty\" = 1 ]; then\n"
	"  export GIT_INDEX_FILE=/tmp/aisb-index GIT_OBJECT_DIRECTORY=/tmp/aisb-objects\n"
	"  export GIT_ALTERNATE_OBJECT_DIRECTORIES=\"$PWD/.git/objects\"\n"
	"  mkdir -p /tmp/aisb-objects\n"
	"  cp .git/index /tmp/aisb-index 2>/dev/null || git read-tree \"$tip\"\n"
	"  git add -A . || exit 4\n"
	"  tree=$(git write-tree) || exit 4\n"
	"  tip=$(git -c user.name=aisb -c user.email=aisb@sandbox.invalid commit-tree \"$tree\" -p \"$tip\" "
	"-m 'aisb: checkpoint of the uncommitted work') || exit 4\n"
	"  dirty=0\n"
	"fi\n"
	"printf 'tip=%s\\ndirty=%s\\n' \"$tip\" \"$dirty\" > \"$out/status\"\n"
	"[ \"$tip\" = \"$base\" ] && exit 0\n"
	"from=$base\n"
	/* the host branch moved: the commits cherry-picked onto its new tip in a scratch repository
	 * under /tmp (default config, no hooks) that borrows the clone's objects and holds the
	 * host's new commits (ONTO ^BASE, packed by the host from its own objects) */
	"if [ -n \"$onto\" ]; then\n"
	"  unset GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\n"
	"  r=/tmp/aisb-rebase\n"
	"  git init -q --template= \"$r\" || exit 6\n"
	"  mkdir -p /tmp/aisb-objects \"$r/.git/objects/info\" || exit 6\n"
	"  printf '%s\\n%s\\n' \"$PWD/.git/objects\" /tmp/aisb-objects > \"$r/.git/objects/info/alternates\" || exit 6\n"
	"  git -C \"$r\" index-pack --stdin --fix-thin < " WORKSPACE_EXPORT_ONTO "/onto.pack >/dev/null || exit 6\n"
	"  cd \"$r\" || exit 6\n"
	"  export GIT_AUTHOR_NAME=aisb GIT_AUTHOR_EMAIL=aisb@sandbox.invalid GIT_COMMITTER_NAME=aisb "
	"GIT_COMMITTER_EMAIL=aisb@sandbox.invalid\n"
	"  git checkout -q --detach \"$onto\" || exit 6\n"
	"  list=$(git rev-list --reverse --topo-order \"$tip\" --not \"$base\") || exit 6\n"
	/* only a line of commits is rebased (the host refuses anything else anyway) */
	"  for c in $list; do\n"
	"    set -- $(git rev-list --parents -n 1 \"$c\")\n"
	"    [ $# -eq 2 ] || { printf '%s\\n' \"$c\" > \"$out/conflict-commit\"; exit 8; }\n"
	"  done\n"
	/* the files copied in as untracked (never imported) are first taken out of the sandbox's
	 * commits, so they cannot conflict with the host's versions, which the rebased trees keep */
	"  if [ -s " WORKSPACE_EXPORT_ONTO "/untracked ]; then\n"
	"    p=$base fi=/tmp/aisb-filter-index\n"
	"    for c in $list; do\n"
	"      rm -f \"$fi\"\n"
	"      GIT_INDEX_FILE=$fi git read-tree \"$c^{tree}\" || exit 6\n"
	"      GIT_INDEX_FILE=$fi GIT_LITERAL_PATHSPECS=1 git rm -q -f --cached --ignore-unmatch "
	"--pathspec-from-file=" WORKSPACE_EXPORT_ONTO "/untracked --pathspec-file-nul >/dev/null || exit 6\n"
	"      t=$(GIT_INDEX_FILE=$fi git write-tree) || exit 6\n"
	"      p=$(git cat-file commit \"$c\" | sed '1,/^$/d' | git commit-tree \"$t\" -p \"$p\") || exit 6\n"
	"    done\n"
	"    list=$(git rev-list --reverse --topo-order \"$p\" --not \"$base\") || exit 6\n"
	"  fi\n"
	"  for c in $list; do\n"
	"    if ! git cherry-pick --allow-empty --keep-redundant-commits \"$c\" >/dev/null; then\n"
	"      printf '%s\\n' \"$c\" > \"$out/conflict-commit\"\n"
	"      git diff --name-only -z --diff-filter=U > \"$out/conflicts\"\n"
	"      exit 7\n"
	"    fi\n"
	"  done\n"
	"  tip=$(git rev-parse --verify HEAD) || exit 6\n"
	"  from=$onto\n"
	"fi\n"
	"{ printf '# v2 git bundle\\n-%s\\n%s refs/heads/aisb-export\\n\\n' \"$from\" \"$tip\"\n"
	"  printf '%s\\n^%s\\n' \"$tip\" \"$from\" | git pack-objects --revs --stdout -q; } > \"$out/export.bundle\" "
	"|| exit 5\n";

/* ---- plan time -------------------------------------------------------------------------- */

void workspace_plan_free(struct workspace_plan *w)
{
	if (!w)
		return;
	free(w->top);
	free(w->rel);
	free(w->base);
	free(w->branch);
	free(w->object_format);
	free(w->target);
	free(w);
}

int workspace_resolve(struct aisb_plan *p, const char *untracked, const char *target, bool import_uncommitted, bool review,
		      env_getter get)
{
	struct workspace_plan *w;
	_cleanup_free_ char *home = NULL, *head = NULL;
	struct gitrun g;
	char *dst = NULL;
	bool relocated = false;
	int r, code = AISB_EXIT_POLICY;

	if (!p->project_src)
		return log_error("--workspace clone needs a project: it cannot be used with --no-cwd"), AISB_EXIT_POLICY;
	if (untracked && !streq(untracked, "none") && !streq(untracked, "copy"))
		return log_error("invalid --untracked '%s' (use none or copy)", untracked), AISB_EXIT_POLICY;
	if (target && !streq(target, "current") && !ws_branch_name_valid(target))
		return log_error("invalid --target '%s': use current, or a branch name git accepts", target),
		       AISB_EXIT_POLICY;
	if (gitrun_init(&g, p->project_src, 0, get) < 0)
		return AISB_EXIT_POLICY;
	w = calloc(1, sizeof(*w));
	if (!w) {
		gitrun_done(&g);
		return AISB_EXIT_FAILED;
	}
	{
		struct gitrun_call c = { .dir = p->project_src, .in_fd = -1,
					 .args = (const char *const[]){ "rev-parse", "--show-toplevel", NULL } };
		char *nl;
		r = gitrun_call(&g, &c);
		if (r == 0 && c.out && (nl = strchr(c.out, '\n')))
			*nl = 0;
		if (r != 0 || !c.out || !path_is_absolute(c.out)) {
			if ((nl = strchr(c.err, '\n')))
				*nl = 0;
			gitrun_sanitize(c.err);
			log_error("--workspace clone: '%s' is not in a git repository git can use (%s); git init and "
				  "commit, or drop --workspace clone", p->project_src, *c.err ? c.err : "no message");
			gitrun_call_done(&c);
			goto fail;
		}
		w->top = TAKE_PTR(c.out);
	}
	r = gitrun_line(&g, w->top, &w->base, "rev-parse", "--verify", "-q", "HEAD^{commit}", (char *)NULL);
	if (r != 0 || !gitrun_is_oid(w->base)) {
		log_error("--workspace clone: the repository '%s' has no commit yet (commit first: the clone "
			  "starts from HEAD)", w->top);
		goto fail;
	}
	if (gitrun_line(&g, w->top, &w->object_format, "rev-parse", "--show-object-format", (char *)NULL) != 0) {
		free(w->object_format);
		w->object_format = strdup("sha1");
	}
	if (gitrun_line(&g, w->top, &head, "symbolic-ref", "-q", "HEAD", (char *)NULL) == 0 && head &&
	    strncmp(head, "refs/heads/", 11) == 0 && !(w->branch = strdup(head + 11)))
		goto oom;
	if (target && streq(target, "current") && !w->branch) {
		log_error("--target current: HEAD of '%s' is detached; check out the branch to fast-forward, or "
			  "import as a new branch (drop --target)", w->top);
		goto fail;
	}
	home = plan_host_home(get);
	if (home && path_startswith(home, w->top)) {
		log_error("--workspace clone: the repository '%s' contains your home directory; cd into a "
			  "project that is its own repository", w->top);
		goto fail;
	}
	/* the working directory below the top, and the project's place inside redone from the top */
	if (!path_startswith(p->project_src, w->top)) {
		log_error("--workspace clone: '%s' is not below the repository's top '%s' (a symlinked path?)",
			  p->project_src, w->top);
		goto fail;
	}
	w->rel = strdup(p->project_src + strlen(w->top) + (p->project_src[strlen(w->top)] == '/'));
	if (!w->rel)
		goto oom;
	/* the top's place inside: its own path (or /project), unless --workdir named one */
	if (p->project_relocated || streq(p->project_dst, p->project_src)) {
		if (plan_project_dst(w->top, "auto", &dst, &relocated) < 0)
			goto fail;
		free(p->project_dst);
		p->project_dst = dst;
		p->project_relocated = relocated;
	}
	free(p->cwd);
	p->cwd = *w->rel ? path_join(p->project_dst, w->rel) : strdup(p->project_dst);
	free(p->project_src);
	p->project_src = strdup(w->top);
	if (!p->cwd || !p->project_src)
		goto oom;
	/* the clone's .git is the sandbox's own: the host never runs git in it (the export does,
	 * in a sandbox), so there is nothing to pin */
	p->writable_git = true;
	w->untracked_copy = untracked && streq(untracked, "copy");
	w->import_uncommitted = import_uncommitted;
	w->review = review;
	w->get = get;
	if (target && !(w->target = strdup(target)))
		goto oom;
	p->workspace = w;
	gitrun_done(&g);
	return 0;
oom:
	code = AISB_EXIT_FAILED;
fail:
	workspace_plan_free(w);
	gitrun_done(&g);
	return code;
}

static const char *target_name(const struct workspace_plan *w)
{
	return w->target ? w->target : "aisb/<session>";
}

void workspace_plan_print(const struct workspace_plan *w, FILE *f)
{
	if (!w)
		return;
	fprintf(f, "workspace:  clone of %s at %.12s%s%s%s (its own .git; the host's is never mounted), "
		   "untracked files %s; new commits imported as %s%s%s\n",
		w->top, w->base, w->branch ? " (branch " : " (detached", w->branch ? w->branch : "", ")",
		w->untracked_copy ? "copied (not imported)" : "left out",
		w->target && streq(w->target, "current") ? "a fast-forward of the checked-out branch" : target_name(w),
		w->import_uncommitted ? ", uncommitted work as a checkpoint commit" : "",
		w->review ? ", after your review and confirmation" : "");
}

/* ---- workspace.json ---------------------------------------------------------------------- */

static char *ws_path(const char *state, const char *id, const char *name)
{
	char *p;
	if (asprintf(&p, "%s/workspaces/%s%s%s", state, id, name ? "/" : "", name ? name : "") < 0)
		return NULL;
	return p;
}

static json_object *meta_load(const char *dir)
{
	_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_free_ char *text = NULL;

	if (dfd < 0 || read_file_at(dfd, "workspace.json", 1 << 20, &text, NULL) < 0)
		return NULL;
	return json_tokener_parse(text);
}

static int meta_save(const char *dir, json_object *m)
{
	_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	const char *t = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	int r;

	if (dfd < 0)
		return -errno;
	r = write_file_at(dfd, "workspace.json.tmp", t, strlen(t), 0600);
	if (r < 0)
		return r;
	return renameat(dfd, "workspace.json.tmp", dfd, "workspace.json") < 0 ? -errno : 0;
}

static const char *mstr(json_object *m, const char *key)
{
	json_object *v;
	if (m && json_object_object_get_ex(m, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static long long mint(json_object *m, const char *key, long long dflt)
{
	json_object *v;
	if (m && json_object_object_get_ex(m, key, &v) && json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	return dflt;
}

static void mset(json_object *m, const char *key, const char *v)
{
	json_object_object_add(m, key, v ? json_object_new_string(v) : NULL);
}

/* ---- prepare ----------------------------------------------------------------------------- */

/* Copies one untracked file (regular or symlink) from below @src_dfd to below @dst_dfd, making
 * its directories; nothing is followed on the host side. Return: bytes copied or -errno. */
static long long copy_one(int src_dfd, int dst_dfd, const char *rel)
{
	_cleanup_free_ char *dir = strdup(rel);
	_cleanup_close_ int in = -1, out = -1, ddir = -1;
	char *slash = dir ? strrchr(dir, '/') : NULL;
	const char *base = slash ? slash + 1 : rel;
	long long total = 0;
	struct stat st;
	char buf[65536];
	ssize_t k;

	if (!dir)
		return -ENOMEM;
	if (path_has_dotdot(rel) || rel[0] == '/')
		return -EINVAL;
	if (slash) {
		*slash = 0;
		/* mkdir -p below the clone, one component at a time */
		for (char *c = dir; c;) {
			char *n = strchr(c, '/');
			if (n)
				*n = 0;
			if (mkdirat(dst_dfd, dir, 0755) < 0 && errno != EEXIST)
				return -errno;
			if (n)
				*n = '/';
			c = n ? n + 1 : NULL;
		}
		ddir = openat_nofollow(dst_dfd, dir, O_PATH | O_DIRECTORY, 0);
		if (ddir < 0)
			return ddir;
	}
	if (fstatat(src_dfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	/* fstatat may follow symlinked parent directories: open what we copy with none followed */
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		_cleanup_free_ char *pdir = slash ? strndup(rel, (size_t)(strrchr(rel, '/') - rel)) : NULL;
		_cleanup_close_ int sp = slash ? openat_nofollow(src_dfd, pdir, O_PATH | O_DIRECTORY, 0) : -1;
		if (slash && sp < 0)
			return sp;
		k = readlinkat(slash ? sp : src_dfd, base, target, sizeof(target) - 1);
		if (k < 0)
			return -errno;
		target[k] = 0;
		if (symlinkat(target, slash ? ddir : dst_dfd, base) < 0)
			return -errno;
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return 0; /* sockets, fifos, devices: not copied */
	in = openat_nofollow(src_dfd, rel, O_RDONLY | O_NOCTTY, 0);
	if (in < 0)
		return in;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
		return -EINVAL;
	out = openat(slash ? ddir : dst_dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		     (st.st_mode & 0111) ? 0755 : 0644);
	if (out < 0)
		return -errno;
	while ((k = read(in, buf, sizeof(buf))) > 0) {
		if (write_full(out, buf, (size_t)k) < 0)
			return -errno;
		total += k;
	}
	return k < 0 ? -errno : total;
}

/* --untracked copy: the host's untracked files that .gitignore, .git/info/exclude, the user's
 * excludes file and <top>/.aisbignore do not exclude, copied into the clone and listed in
 * <ws>/untracked and the clone's info/exclude (so an honest `git add -A` leaves them out; the
 * import leaves them out regardless). Logs on failure. */
static int copy_untracked(const struct gitrun *g, const struct workspace_plan *w, const char *dir, const char *repo)
{
	_cleanup_free_ char *aisbignore = path_join(w->top, ".aisbignore"), *exclude_from = NULL;
	_cleanup_free_ char *excl_path = path_join(repo, ".git/info/exclude"), *list = path_join(dir, "untracked");
	_cleanup_close_ int sfd = -1, dfd = -1, efd = -1, lfd = -1;
	const char *args[8] = { "ls-files", "-z", "--others", "--exclude-standard", NULL };
	struct gitrun_call c = { .dir = w->top, .args = args, .in_fd = -1 };
	unsigned long long bytes = 0;
	size_t files = 0;
	int r;

	if (!aisbignore || !excl_path || !list)
		return -ENOMEM;
	if (access(aisbignore, R_OK) == 0) {
		if (asprintf(&exclude_from, "--exclude-from=%s", aisbignore) < 0)
			return -ENOMEM;
		args[4] = exclude_from;
	}
	r = gitrun_call(g, &c);
	if (r != 0) {
		log_error("--untracked copy: cannot list the untracked files of '%s': %s", w->top, r < 0 ? strerror(-r) : c.err);
		gitrun_call_done(&c);
		return -EIO;
	}
	sfd = open(w->top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	dfd = open(repo, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	{
		/* git init --template= makes no .git/info */
		_cleanup_free_ char *info = path_join(repo, ".git/info");
		if (!info || (mkdir(info, 0755) < 0 && errno != EEXIST))
			return log_error_errno(info ? -errno : -ENOMEM, "--untracked copy: cannot create .git/info: %m");
	}
	efd = open(excl_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	lfd = open(list, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (sfd < 0 || dfd < 0 || efd < 0 || lfd < 0) {
		r = -errno;
		gitrun_call_done(&c);
		return log_error_errno(r, "--untracked copy: cannot open the workspace: %m");
	}
	for (size_t off = 0; off < c.out_len;) {
		const char *rel = c.out + off;
		size_t n = strlen(rel);
		_cleanup_free_ char *pat = NULL;
		long long k;

		off += n + 1;
		if (!n || rel[n - 1] == '/')
			continue; /* a nested repository: not copied */
		if (++files > UNTRACKED_MAX_FILES) {
			gitrun_call_done(&c);
			return log_error("--untracked copy: more than %d untracked files in '%s'; list the ones the "
					 "sandbox must not see in .aisbignore", UNTRACKED_MAX_FILES, w->top), -E2BIG;
		}
		k = copy_one(sfd, dfd, rel);
		if (k < 0) {
			gitrun_call_done(&c);
			return log_error_errno((int)k, "--untracked copy: cannot copy '%s': %m", rel);
		}
		bytes += (unsigned long long)k;
		if (bytes > UNTRACKED_MAX_BYTES) {
			gitrun_call_done(&c);
			return log_error("--untracked copy: more than 2 GiB of untracked files in '%s'; exclude them "
					 "in .aisbignore", w->top), -E2BIG;
		}
		if (ws_exclude_pattern(rel, &pat) < 0 || write_full(efd, pat, strlen(pat)) < 0 ||
		    write_full(lfd, rel, n + 1) < 0) {
			gitrun_call_done(&c);
			return log_error_errno(-EIO, "--untracked copy: cannot record '%s': %m", rel);
		}
	}
	gitrun_call_done(&c);
	return 0;
}

/* Does the project borrow objects from another store (objects/info/alternates)? Unknown: yes. */
static bool uses_alternates(const struct gitrun *g, const char *top)
{
	_cleanup_free_ char *path = NULL;
	struct stat st;

	if (gitrun_line(g, top, &path, "rev-parse", "--path-format=absolute", "--git-path", "objects/info/alternates",
			(char *)NULL) != 0 || !path || !path_is_absolute(path))
		return true;
	return stat(path, &st) == 0 && st.st_size > 0;
}

int workspace_prepare(const struct aisb_plan *p, struct aisb_session *ss)
{
	const struct workspace_plan *w = p->workspace;
	_cleanup_free_ char *wsroot = path_join(ss->state_dir, "workspaces"), *repo = NULL, *ref = NULL;
	_cleanup_free_ char *now = NULL, *fmt = NULL;
	const char *branch = w->branch ? w->branch : "aisb-work";
	json_object *m;
	struct gitrun g;
	int r;

	if (!wsroot || !(ss->workspace_dir = path_join(wsroot, ss->id)) || !(repo = path_join(ss->workspace_dir, "repo")))
		return -ENOMEM;
	if ((r = mkdir_p(wsroot, 0700)) < 0 || (mkdir(ss->workspace_dir, 0700) < 0 && (r = -errno)))
		return log_error_errno(r, "cannot create the workspace '%s': %m", ss->workspace_dir);
	if (gitrun_init(&g, w->top, w->untracked_copy ? GITRUN_EXCLUDES : 0, w->get) < 0)
		return -EINVAL;
	if (asprintf(&ref, "+HEAD:refs/heads/%s", branch) < 0 || asprintf(&fmt, "--object-format=%s", w->object_format) < 0 ||
	    asprintf(&now, "refs/heads/%s", branch) < 0) {
		gitrun_done(&g);
		return -ENOMEM;
	}
	/* git clone --local --no-hardlinks: the object files are copied, never linked, so the
	 * sandbox owns separate inodes and can change no object file of the host's (with a shared
	 * inode, chmod and a rewrite would reach the host's pack). Measured on a 30000-commit,
	 * 90000-object repository: 0.23 s, where a fetch over the file transport (upload-pack,
	 * index-pack) took 15 s (6 s of CPU). A project that borrows objects (alternates) is fetched
	 * instead: a copy would point the clone at a path the sandbox cannot see. */
	if (uses_alternates(&g, w->top)) {
		r = gitrun_ok(&g, NULL, "--workspace clone: git init", "init", "-q", "--template=", fmt, repo, (char *)NULL);
		if (r >= 0)
			r = gitrun_ok(&g, repo, "--workspace clone: fetching the project's HEAD", "fetch", "-q", "--no-tags",
				      "--update-head-ok", "--no-recurse-submodules", "--no-write-fetch-head", w->top, ref,
				      (char *)NULL);
		if (r >= 0)
			r = gitrun_ok(&g, repo, "--workspace clone", "symbolic-ref", "HEAD", now, (char *)NULL);
	} else {
		r = gitrun_ok(&g, NULL, "--workspace clone: git clone", "clone", "-q", "--local", "--no-hardlinks",
			      "--no-checkout", "--single-branch", "--no-tags", "--template=", "--", w->top, repo, (char *)NULL);
		if (r >= 0)
			r = gitrun_ok(&g, repo, "--workspace clone", "remote", "remove", "origin", (char *)NULL);
	}
	if (r >= 0) {
		_cleanup_free_ char *got = NULL;
		r = gitrun_line(&g, repo, &got, "rev-parse", "--verify", "-q", "HEAD^{commit}", (char *)NULL);
		if (r != 0 || !got || !streq(got, w->base)) {
			log_error("--workspace clone: HEAD of '%s' moved while the sandbox was being prepared (%.12s "
				  "-> %.12s); start again", w->top, w->base, got ? got : "?");
			r = -ESTALE;
		}
	}
	if (r >= 0)
		r = gitrun_ok(&g, repo, "--workspace clone", "update-ref", now, w->base, (char *)NULL);
	if (r >= 0)
		r = gitrun_ok(&g, repo, "--workspace clone", "symbolic-ref", "HEAD", now, (char *)NULL);
	if (r >= 0)
		r = gitrun_ok(&g, repo, "--workspace clone: checking out", "reset", "-q", "--hard", (char *)NULL);
	/* an identity for commits made inside; every commit is rebuilt with yours at import */
	if (r >= 0)
		r = gitrun_ok(&g, repo, "--workspace clone", "config", "user.name", SANDBOX_IDENT_NAME, (char *)NULL);
	if (r >= 0)
		r = gitrun_ok(&g, repo, "--workspace clone", "config", "user.email", SANDBOX_IDENT_EMAIL, (char *)NULL);
	if (r >= 0 && w->untracked_copy)
		r = copy_untracked(&g, w, ss->workspace_dir, repo);
	gitrun_done(&g);
	if (r < 0) {
		/* nothing of it was used yet: no half-made workspace stays behind */
		(void)rm_rf(ss->workspace_dir);
		return r;
	}

	m = json_object_new_object();
	mset(m, "session", ss->id);
	mset(m, "project", w->top);
	mset(m, "rel", w->rel);
	mset(m, "base", w->base);
	mset(m, "branch", w->branch);
	mset(m, "object_format", w->object_format);
	mset(m, "target", w->target);
	json_object_object_add(m, "untracked_copy", json_object_new_boolean(w->untracked_copy));
	json_object_object_add(m, "import_uncommitted", json_object_new_boolean(w->import_uncommitted));
	json_object_object_add(m, "review", json_object_new_boolean(w->review));
	{
		/* the names of the values passed in, never a value: a later review says it cannot
		 * mask them */
		json_object *env = json_object_new_array();
		for (size_t i = 0; i < p->n_env; i++)
			if (p->env[i].secret) /* --env / --env-file, not aisb's own TERM, PATH, ... */
				json_object_array_add(env, json_object_new_string(p->env[i].name));
		json_object_object_add(m, "env_names", env);
	}
	json_object_object_add(m, "created", json_object_new_int64((int64_t)time(NULL)));
	mset(m, "state", "running");
	r = meta_save(ss->workspace_dir, m);
	json_object_put(m);
	if (r < 0)
		return log_error_errno(r, "cannot write '%s/workspace.json': %m", ss->workspace_dir);
	ss->project_src = TAKE_PTR(repo); /* the project the sandbox gets: plan_project_src() */
	return 0;
}

/* ---- import ------------------------------------------------------------------------------ */

struct import {
	struct gitrun g;
	json_object *m;
	const char *id, *dir, *top;
	const char *base;       /* what the commits are validated and rebuilt on: the recorded base, or onto */
	const char *orig_base;  /* the base the workspace was cloned at */
	char onto[65];          /* the host branch's tip the commits were rebased onto, or "" */
	char *q;                /* the quarantine repository */
	char *out;              /* the export's output dir */
	char **set;             /* the bundle's objects, sorted */
	size_t nset;
	char **chain;           /* the sandbox's commits, oldest first */
	char **subjects;        /* the rebuilt commits: "OID12 subject" (sanitized), oldest first */
	int n;
	char tip[65], new[65];
};

static void import_done(struct import *im)
{
	gitrun_done(&im->g);
	json_object_put(im->m);
	free(im->q);
	free(im->out);
	strv_free(im->set);
	strv_free(im->chain);
	strv_free(im->subjects);
}

/* One refusal: the message, recorded in workspace.json. Return: -EPERM. */
static int refuse(struct import *im, const char *fmt, ...) _printf_(2, 3);
static int refuse(struct import *im, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gitrun_sanitize(msg);
	log_error("import of session %s refused: %s; the workspace is kept (%s)", im->id, msg, im->dir);
	mset(im->m, "state", "refused");
	mset(im->m, "message", msg);
	(void)meta_save(im->dir, im->m);
	return -EPERM;
}

static int call_out(struct import *im, const char *dir, const char *const *args, char **out, int in_fd, const char *in,
		    size_t in_len, const char *const *env, bool ident, char *err, size_t errlen)
{
	struct gitrun_call c = { .dir = dir, .args = args, .in_fd = in_fd, .in = in, .in_len = in_len, .env = env,
				 .ident = ident };
	int r = gitrun_call(&im->g, &c);

	if (err)
		snprintf(err, errlen, "%s", c.err);
	if (out)
		*out = TAKE_PTR(c.out);
	gitrun_call_done(&c);
	return r;
}

static void chomp(char *s)
{
	size_t n = s ? strlen(s) : 0;
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = 0;
}

/* The quarantine: a bare repository of aisb's own whose only config is git's default, borrowing
 * the project's objects through alternates (read-only: it writes only its own). */
static int quarantine_create(struct import *im)
{
	_cleanup_free_ char *common = NULL, *objects = NULL, *alt = NULL, *fmt = NULL;
	const char *of = mstr(im->m, "object_format") ? mstr(im->m, "object_format") : "sha1";
	int r;

	im->q = path_join(im->dir, "import.git");
	if (!im->q || asprintf(&fmt, "--object-format=%s", of) < 0)
		return -ENOMEM;
	(void)rm_rf(im->q);
	r = gitrun_line(&im->g, im->top, &common, "rev-parse", "--path-format=absolute", "--git-common-dir", (char *)NULL);
	if (r != 0 || !common || !path_is_absolute(common))
		return log_error("import: cannot find the git directory of '%s'", im->top), -EIO;
	im->g.bare = im->q; /* named with --git-dir= from now on (gitrun.h) */
	if (gitrun_ok(&im->g, NULL, "import: git init (quarantine)", "init", "-q", "--bare", "--template=", fmt, im->q,
		      (char *)NULL) < 0)
		return -EIO;
	objects = path_join(common, "objects");
	alt = path_join(im->q, "objects/info");
	if (!objects || !alt)
		return -ENOMEM;
	if ((r = mkdir_p(alt, 0700)) < 0)
		return log_error_errno(r, "import: cannot create '%s': %m", alt);
	{
		_cleanup_close_ int dfd = open(alt, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		_cleanup_free_ char *line = NULL;
		if (dfd < 0 || asprintf(&line, "%s\n", objects) < 0 ||
		    write_file_at(dfd, "alternates", line, strlen(line), 0600) < 0)
			return log_error_errno(-EIO, "import: cannot write the quarantine's alternates: %m");
	}
	return 0;
}

/* Opens @name in the export's output dir, which the sandbox could write: no symlink followed, no
 * FIFO waited on (O_NONBLOCK), only a regular file. Return: the fd or -errno. */
static int open_out_file(const char *out, const char *name)
{
	_cleanup_close_ int dfd = open(out, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	int fd;

	if (dfd < 0)
		return -errno;
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	(void)fcntl(fd, F_SETFL, 0);
	return fd;
}

/* Reads the export's status file ("tip=X\ndirty=0|1\n", untrusted: used for messages and to
 * decide whether work was left behind). */
static bool export_dirty(const char *out)
{
	_cleanup_close_ int fd = open_out_file(out, "status");
	char buf[256];
	ssize_t k;

	if (fd < 0 || (k = read(fd, buf, sizeof(buf) - 1)) < 0)
		return true; /* unknown: assume work is left */
	buf[k] = 0;
	return strstr(buf, "dirty=1") != NULL;
}

/* The bundle: header parsed here, pack indexed strictly, objects listed. */
static int import_bundle(struct import *im, int bfd)
{
	char head[WS_BUNDLE_HEADER_MAX], err[GITRUN_ERR_MAX];
	struct ws_bundle b;
	const char *why;
	_cleanup_free_ char *out = NULL, *idx = NULL, *listing = NULL;
	ssize_t k;
	int r;

	k = pread(bfd, head, sizeof(head), 0);
	if (k < 0)
		return log_error_errno(-errno, "import: cannot read the bundle: %m");
	if (ws_bundle_parse(head, (size_t)k, im->base, &b, &why) < 0)
		return refuse(im, "the bundle is not acceptable: %s", why);
	memcpy(im->tip, b.tip, sizeof(im->tip));
	if (lseek(bfd, (off_t)b.pack_offset, SEEK_SET) < 0)
		return -errno;
	/* --strict: every object checked as fsck does, and every link present; no --fix-thin, so
	 * a delta on an object outside the pack is refused; the pack is bounded */
	r = call_out(im, im->q, (const char *const[]){ "index-pack", "--strict", "--stdin",
						       /* NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one word */
						       "--max-input-size=" WS_PACK_MAX_STR, NULL }, &out, bfd, NULL, 0, NULL,
		     false, err, sizeof(err));
	if (r != 0)
		return refuse(im, "git index-pack --strict refused the bundle's pack: %s", *err ? err : "no message");
	chomp(out);
	if (strncmp(out, "pack\t", 5) != 0 || !gitrun_is_oid(out + 5))
		return refuse(im, "git index-pack said '%s'", out);
	if (asprintf(&idx, "%s/objects/pack/pack-%s.idx", im->q, out + 5) < 0)
		return -ENOMEM;
	{
		_cleanup_close_ int ifd = open(idx, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (ifd < 0)
			return log_error_errno(-errno, "import: cannot open '%s': %m", idx);
		r = call_out(im, im->q, (const char *const[]){ "show-index", NULL }, &listing, ifd, NULL, 0, NULL, false, err,
			     sizeof(err));
	}
	if (r != 0 || (r = ws_oidset_from_show_index(listing, &im->set)) < 0)
		return refuse(im, "cannot list the objects of the bundle's pack");
	im->nset = (size_t)r;
	if (!ws_oidset_has(im->set, im->nset, im->tip))
		return refuse(im, "the bundle's tip %.12s is not in its pack", im->tip);
	return 0;
}

/* fsck, containment, parentage, ancestry, count. */
static int import_validate(struct import *im)
{
	_cleanup_free_ char *type = NULL, *objs = NULL, *parents = NULL, *count = NULL;
	char err[GITRUN_ERR_MAX];
	const char *why;
	int r;

	r = gitrun_line(&im->g, im->q, &type, "cat-file", "-t", im->tip, (char *)NULL);
	if (r != 0 || !streq(type, "commit"))
		return refuse(im, "the bundle's tip %.12s is not a commit", im->tip);
	if (gitrun_ok(&im->g, im->q, "import", "update-ref", "refs/aisb/tip", im->tip, (char *)NULL) < 0)
		return -EIO;
	/* the imported objects only: not the project's commit-graph and multi-pack-index, which
	 * fsck would verify through the alternates (1.4 s of a 30000-commit project's, measured) */
	r = call_out(im, im->q, (const char *const[]){ "fsck", "--strict", "--no-full", "--no-dangling", "--no-progress",
						 "--no-reflogs", NULL }, NULL, -1, NULL, 0,
		     (const char *const[]){ "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=core.commitGraph", "GIT_CONFIG_VALUE_0=false",
				      "GIT_CONFIG_KEY_1=core.multiPackIndex", "GIT_CONFIG_VALUE_1=false", NULL },
		     false, err, sizeof(err));
	if (r != 0)
		return refuse(im, "git fsck --strict failed on the imported objects: %s", *err ? err : "no message");
	/* every object the new commits reach beyond the base must have come in the bundle: an
	 * object borrowed from elsewhere in the host's store (another branch, a stash) is refused */
	r = call_out(im, im->q, (const char *const[]){ "rev-list", "--objects", im->tip, "--not", (char *)im->base, NULL }, &objs,
		     -1, NULL, 0, NULL, false, err, sizeof(err));
	if (r != 0)
		return refuse(im, "git rev-list failed on the imported commits: %s", err);
	for (char *l = objs, *nl; l && *l; l = nl) {
		char oid[65];
		size_t n;
		nl = strchr(l, '\n');
		if (nl)
			*nl++ = 0;
		n = strcspn(l, " ");
		if (n >= sizeof(oid))
			return refuse(im, "git listed a malformed object");
		memcpy(oid, l, n);
		oid[n] = 0;
		if (!ws_oidset_has(im->set, im->nset, oid))
			return refuse(im, "object %s that the sandbox's commits reach is not in the bundle (it was "
				      "borrowed from the host's object store)", oid);
	}
	r = call_out(im, im->q, (const char *const[]){ "rev-list", "--parents", "--reverse", "--topo-order", im->tip, "--not",
						 (char *)im->base, NULL }, &parents, -1, NULL, 0, NULL, false, err, sizeof(err));
	if (r != 0)
		return refuse(im, "git rev-list failed on the imported commits: %s", err);
	r = ws_chain_check(parents, im->base, im->tip, &im->chain, &why);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return refuse(im, "%s", why);
	im->n = r;
	r = call_out(im, im->q, (const char *const[]){ "merge-base", "--is-ancestor", (char *)im->base, im->tip, NULL }, NULL, -1,
		     NULL, 0, NULL, false, NULL, 0);
	if (r != 0)
		return refuse(im, "the recorded base %.12s is not an ancestor of the tip", im->base);
	unsigned long long listed = 0;
	if (gitrun_line(&im->g, im->q, &count, "rev-list", "--count", im->tip, "--not", im->base, (char *)NULL) != 0 ||
	    parse_u64(count, &listed) < 0 || listed != (unsigned long long)im->n)
		return refuse(im, "the commit count does not match (%s listed, %d in the line)", count ? count : "?", im->n);
	return 0;
}

/* The copied untracked files, NUL-separated, or NULL. */
static char *untracked_list(const char *dir, size_t *len)
{
	_cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	char *text = NULL;

	*len = 0;
	if (dfd < 0 || read_file_at(dfd, "untracked", 64u << 20, &text, len) < 0 || !*len) {
		free(text);
		return NULL;
	}
	return text;
}

/* Rebased onto the moved branch: the copied untracked files that the host has since committed
 * (in ONTO's tree) are not removed from the rebuilt trees but kept as ONTO has them, so the
 * import never deletes a host file. @keep gets those entries for `update-index --index-info`. */
static int untracked_in_onto(struct import *im, const char *ulist, size_t ulen, char **keep, size_t *keep_len)
{
	_cleanup_strv_free_ char **set = NULL;
	struct gitrun_call c = { .dir = im->q, .in_fd = -1,
				 .args = (const char *const[]){ "ls-tree", "-r", "-z", "--full-tree", im->onto, NULL } };
	int r;

	for (size_t off = 0; off < ulen; off += strlen(ulist + off) + 1)
		if (ulist[off] && strv_push(&set, ulist + off) < 0)
			return -ENOMEM;
	strv_sort(set);
	r = gitrun_call(&im->g, &c);
	if (r != 0) {
		log_error("import: cannot list the tree of %.12s: %s", im->onto, r < 0 ? strerror(-r) : c.err);
		gitrun_call_done(&c);
		return -EIO;
	}
	r = ws_ls_tree_filter(c.out, c.out_len, set, strv_length(set), keep, keep_len);
	gitrun_call_done(&c);
	return r < 0 ? r : 0;
}

/* Every commit of the line rebuilt with the user's identity on the rebuilt parent; the copied
 * untracked files removed from each tree (kept as the moved branch has them, when rebased). */
static int import_rebuild(struct import *im)
{
	size_t ulen = 0;
	_cleanup_free_ char *ulist = untracked_list(im->dir, &ulen);
	_cleanup_free_ char *index = path_join(im->dir, "import.index"), *empty = path_join(im->dir, "import.empty");
	_cleanup_free_ char *env_index = NULL, *env_wt = NULL, *keep = NULL;
	char parent[65], err[GITRUN_ERR_MAX];
	size_t keep_len = 0;
	int r;

	if (ulist && *im->onto && (r = untracked_in_onto(im, ulist, ulen, &keep, &keep_len)) < 0)
		return r;

	if (!index || !empty || asprintf(&env_index, "GIT_INDEX_FILE=%s", index) < 0 ||
	    asprintf(&env_wt, "GIT_WORK_TREE=%s", empty) < 0)
		return -ENOMEM;
	(void)mkdir(empty, 0700);
	snprintf(parent, sizeof(parent), "%s", im->base);
	for (int i = 0; i < im->n; i++) {
		_cleanup_free_ char *obj = NULL, *msg = NULL, *newc = NULL, *tree2 = NULL;
		const char *const envs[] = { env_index, env_wt, NULL };
		char tree[65];
		const char *m;
		size_t mlen;

		r = call_out(im, im->q, (const char *const[]){ "cat-file", "commit", im->chain[i], NULL }, &obj, -1, NULL, 0, NULL,
			     false, err, sizeof(err));
		if (r != 0 || ws_commit_parse(obj, strlen(obj), tree, &m, &mlen) < 0)
			return refuse(im, "cannot read commit %.12s", im->chain[i]);
		if (ulist) {
			(void)unlink(index);
			r = call_out(im, im->q, (const char *const[]){ "read-tree", tree, NULL }, NULL, -1, NULL, 0, envs, false, err,
				     sizeof(err));
			if (r == 0)
				r = call_out(im, im->q, (const char *const[]){ "update-index", "--force-remove", "-z", "--stdin", NULL },
					     NULL, -1, ulist, ulen, envs, false, err, sizeof(err));
			if (r == 0 && keep_len)
				r = call_out(im, im->q, (const char *const[]){ "update-index", "-z", "--index-info", NULL }, NULL, -1,
					     keep, keep_len, envs, false, err, sizeof(err));
			if (r == 0)
				r = call_out(im, im->q, (const char *const[]){ "write-tree", NULL }, &tree2, -1, NULL, 0, envs, false,
					     err, sizeof(err));
			if (r != 0)
				return log_error("import: cannot leave the copied untracked files out of %.12s: %s",
						 im->chain[i], err), -EIO;
			chomp(tree2);
			if (!gitrun_is_oid(tree2))
				return -EIO;
			snprintf(tree, sizeof(tree), "%s", tree2);
		}
		/* the message is the sandbox's text (data, never run); the trailer names the session */
		if (asprintf(&msg, "%.*s%s\nAisb-Session: %s\n", (int)mlen, m,
			     mlen && m[mlen - 1] != '\n' ? "\n" : "", im->id) < 0)
			return -ENOMEM;
		r = call_out(im, im->q, (const char *const[]){ "commit-tree", tree, "-p", parent, "-F", "-", NULL }, &newc, -1, msg,
			     strlen(msg), NULL, true, err, sizeof(err));
		chomp(newc);
		if (r != 0 || !gitrun_is_oid(newc))
			return log_error("import: git commit-tree failed: %s", err), -EIO;
		{
			/* for --review: the subject, the sandbox's text, bounded and sanitized */
			size_t sl = strcspn(m, "\n");
			char *line = NULL;
			if (sl > mlen)
				sl = mlen;
			if (asprintf(&line, "%.12s %.*s%s", newc, (int)(sl > 100 ? 100 : sl), m, sl > 100 ? "..." : "") < 0)
				return -ENOMEM;
			gitrun_sanitize(line);
			if (strv_push_take(&im->subjects, line) < 0)
				return -ENOMEM;
		}
		snprintf(parent, sizeof(parent), "%s", newc);
	}
	(void)unlink(index);
	(void)rmdir(empty);
	memcpy(im->new, parent, sizeof(im->new));
	if (gitrun_ok(&im->g, im->q, "import", "update-ref", "refs/aisb/new", im->new, (char *)NULL) < 0)
		return -EIO;
	return 0;
}

static const char *zero_oid(const char *like)
{
	static const char zeros[] = "0000000000000000000000000000000000000000000000000000000000000000";
	return zeros + (64 - strlen(like));
}

/* The branches checked out in any worktree of the project ("refs/heads/X" lines). */
static bool branch_checked_out(struct import *im, const char *ref)
{
	_cleanup_free_ char *out = NULL;
	char needle[512];

	if (call_out(im, im->top, (const char *const[]){ "worktree", "list", "--porcelain", NULL }, &out, -1, NULL, 0, NULL,
		     false, NULL, 0) != 0)
		return true; /* unknown: treat as checked out */
	snprintf(needle, sizeof(needle), "branch %s\n", ref);
	return strstr(out, needle) != NULL;
}

/* A lock per worktree (its git dir), in the state dir: two imports never interleave there. */
static int worktree_lock(struct import *im, const char *state)
{
	_cleanup_free_ char *gitdir = NULL, *path = NULL;
	unsigned long long h = 1469598103934665603ull;
	int fd;

	if (gitrun_line(&im->g, im->top, &gitdir, "rev-parse", "--absolute-git-dir", (char *)NULL) != 0 || !gitdir)
		return log_error("import: cannot find the git directory of '%s'", im->top), -EIO;
	for (const char *c = gitdir; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	if (asprintf(&path, "%s/workspaces/.lock-%016llx", state, h) < 0)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return log_error_errno(-errno, "import: cannot open the lock '%s': %m", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return log_error("import: another import into '%s' is running", im->top), -EBUSY;
	}
	return fd;
}

/* The host branch moved since the sandbox started (the Pi extension's "compatible host
 * advancement"): its tip ONTO must have the base as ancestor; the host's own commits ONTO ^BASE
 * (host git on the host's objects only) are packed into <ws>/onto/onto.pack for the export
 * sandbox, which rebases there. Sets im->onto (left "" when the branch did not move). @asked:
 * --rebase was given (else --target current asks).
 * Return: 0, -EPERM a refusal, -errno. */
static int rebase_prepare(struct import *im, bool asked, char **onto_dir)
{
	const char *branch = mstr(im->m, "branch");
	_cleanup_free_ char *ref = NULL, *now = NULL, *in = NULL, *dir = NULL;
	_cleanup_close_ int dfd = -1;
	char err[GITRUN_ERR_MAX];
	int r;

	if (!branch && !asked)
		return 0; /* --target current refuses a detached start itself (publish_current) */
	if (!branch)
		return refuse(im, "--rebase: the workspace was cloned from a detached HEAD, there is no branch to follow; "
			      "import without --rebase");
	if (asprintf(&ref, "refs/heads/%s", branch) < 0)
		return -ENOMEM;
	if (gitrun_line(&im->g, im->top, &now, "rev-parse", "--verify", "-q", ref, (char *)NULL) != 0 || !gitrun_is_oid(now))
		return refuse(im, "branch '%s', which the sandbox started from, no longer exists in '%s'; import as a new "
			      "branch: aisb import %s --target aisb/%s", branch, im->top, im->id, im->id);
	if (streq(now, im->base))
		return 0;
	r = call_out(im, im->top, (const char *const[]){ "merge-base", "--is-ancestor", (char *)im->base, now, NULL }, NULL, -1,
		     NULL, 0, NULL, false, err, sizeof(err));
	if (r == 1)
		return refuse(im, "branch '%s' was rewritten since the sandbox started (its tip %.12s does not contain the "
			      "base %.12s), so there is nothing to rebase onto; import as a new branch and merge it "
			      "yourself: aisb import %s --target aisb/%s", branch, now, im->base, im->id, im->id);
	if (r != 0)
		return log_error("import: git merge-base failed in '%s': %s", im->top, err), -EIO;
	if (asprintf(&in, "%s\n^%s\n", now, im->base) < 0 || !(dir = path_join(im->dir, "onto")))
		return -ENOMEM;
	(void)rm_rf(dir);
	if (mkdir(dir, 0700) < 0)
		return log_error_errno(-errno, "import: cannot create '%s': %m", dir);
	{
		struct gitrun_call c = { .dir = im->top, .in = in, .in_len = strlen(in), .in_fd = -1,
					 .args = (const char *const[]){ "pack-objects", "--revs", "--stdout", "-q", NULL } };
		r = gitrun_call(&im->g, &c);
		if (r != 0) {
			log_error("import: cannot pack the host's commits %.12s..%.12s: %s", im->base, now,
				  r == -E2BIG ? "more than 64 MiB" : r < 0 ? strerror(-r) : c.err);
			gitrun_call_done(&c);
			return -EIO;
		}
		dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		r = dfd < 0 ? -errno : write_file_at(dfd, "onto.pack", c.out, c.out_len, 0600);
		gitrun_call_done(&c);
		if (r < 0)
			return log_error_errno(r, "import: cannot write '%s/onto.pack': %m", dir);
	}
	{
		/* the copied untracked files, which the rebase takes out of the sandbox's commits */
		size_t ulen = 0;
		_cleanup_free_ char *ulist = untracked_list(im->dir, &ulen);
		if (ulist && (r = write_file_at(dfd, "untracked", ulist, ulen, 0600)) < 0)
			return log_error_errno(r, "import: cannot write '%s/untracked': %m", dir);
	}
	snprintf(im->onto, sizeof(im->onto), "%s", now);
	*onto_dir = TAKE_PTR(dir);
	return 0;
}

/* The export said a commit did not apply on im->onto: the refusal names it and the conflicting
 * paths (out/conflict-commit, out/conflicts: written by the sandbox, so bounded and sanitized). */
static int refuse_conflict(struct import *im, bool not_a_line)
{
	_cleanup_close_ int cfd = open_out_file(im->out, "conflict-commit"), pfd = open_out_file(im->out, "conflicts");
	char commit[80] = "", paths[480] = "";
	ssize_t k;

	if (cfd >= 0 && (k = read(cfd, commit, sizeof(commit) - 1)) > 0) {
		commit[k] = 0;
		commit[strcspn(commit, "\n")] = 0;
	}
	if (pfd >= 0 && (k = read(pfd, paths, sizeof(paths) - 1)) > 0) {
		paths[k] = 0;
		/* NUL-separated: ',' between the names; a list cut at the buffer ends in "..." */
		for (ssize_t i = 0; i < k; i++)
			if (!paths[i])
				paths[i] = i + 1 < k ? ',' : 0;
		if ((size_t)k == sizeof(paths) - 1)
			memcpy(paths + sizeof(paths) - 4, "...", 4);
	}
	gitrun_sanitize(commit);
	gitrun_sanitize(paths);
	if (not_a_line)
		return refuse(im, "the sandbox's commit %.12s is a merge or a new root: only a line of commits on the base is "
			      "imported (or rebased onto the moved branch)", *commit ? commit : "?");
	return refuse(im, "the host branch '%s' moved since the sandbox started (%.12s -> %.12s) and the sandbox's commit "
		      "%.12s does not apply on it: conflict in %s; nothing was published and the branch is untouched; "
		      "import on the old base as a new branch and merge it yourself: aisb import %s --target aisb/%s",
		      mstr(im->m, "branch") ? mstr(im->m, "branch") : "?", im->orig_base, im->onto, *commit ? commit : "?",
		      *paths ? paths : "(no file named: git could not apply it)", im->id, im->id);
}

/* --target current: the checked-out branch fast-forwarded, guarded. */
static int publish_current(struct import *im)
{
	const char *branch = mstr(im->m, "branch");
	_cleanup_free_ char *head = NULL, *now = NULL, *status = NULL, *rec = NULL, *ref = NULL, *msg = NULL;
	char err[GITRUN_ERR_MAX];
	int r;

	if (!branch)
		return refuse(im, "--target current: the workspace was cloned from a detached HEAD");
	if (asprintf(&ref, "refs/heads/%s", branch) < 0 || asprintf(&rec, "refs/aisb-recovery/%s", im->id) < 0 ||
	    asprintf(&msg, "aisb import %s", im->id) < 0)
		return -ENOMEM;
	if (gitrun_line(&im->g, im->top, &head, "symbolic-ref", "-q", "HEAD", (char *)NULL) != 0 || !streq(head, ref))
		return refuse(im, "--target current: '%s' has %s checked out, not '%s' (the branch the sandbox started "
			      "from); import as a new branch: aisb import %s --target aisb/%s", im->top,
			      head ? head : "a detached HEAD", branch, im->id, im->id);
	if (gitrun_line(&im->g, im->top, &now, "rev-parse", "--verify", "-q", ref, (char *)NULL) != 0 || !streq(now, im->base))
		return refuse(im, "--target current: branch '%s' moved during the import (%.12s -> %.12s); import "
			      "again: aisb import %s --target current", branch, im->base, now ? now : "?", im->id);
	r = call_out(im, im->top, (const char *const[]){ "status", "--porcelain=v1", "--untracked-files=no",
						   "--ignore-submodules=none", NULL }, &status, -1, NULL, 0, NULL, false, err,
		     sizeof(err));
	if (r != 0 || (status && *status))
		return refuse(im, "--target current: '%s' has uncommitted changes to tracked files; commit or stash "
			      "them, then: aisb import %s --target current", im->top, im->id);
	/* the commits are safe under a recovery ref before anything of the branch moves (aisb's own
	 * name for this session: one left by an earlier failed attempt is replaced) */
	if (gitrun_ok(&im->g, im->top, "import: recovery ref", "update-ref", "-m", msg, rec, im->new,
		      (char *)NULL) < 0)
		return -EIO;
	r = call_out(im, im->top, (const char *const[]){ "update-ref", "-m", msg, ref, im->new, (char *)im->base, NULL }, NULL, -1,
		     NULL, 0, NULL, false, err, sizeof(err));
	if (r != 0)
		return refuse(im, "--target current: publishing failed (the branch moved?): %s; the commits are at %s",
			      err, rec);
	/* index and worktree follow the branch, as `git merge --ff-only` would (no hook runs) */
	r = call_out(im, im->top, (const char *const[]){ "read-tree", "-m", "-u", (char *)im->base, im->new, NULL }, NULL, -1,
		     NULL, 0, NULL, false, err, sizeof(err));
	if (r != 0) {
		int r2 = call_out(im, im->top, (const char *const[]){ "update-ref", "-m", msg, ref, (char *)im->base, im->new, NULL },
				  NULL, -1, NULL, 0, NULL, false, NULL, 0);
		return refuse(im, "--target current: updating the worktree failed: %s; branch '%s' %s; the commits are "
			      "at %s", err, branch, r2 == 0 ? "was set back" : "is at the new commits", rec);
	}
	(void)call_out(im, im->top, (const char *const[]){ "update-ref", "-d", rec, im->new, NULL }, NULL, -1, NULL, 0, NULL,
		       false, NULL, 0);
	mset(im->m, "imported_ref", ref);
	return 0;
}

/* A new branch (aisb/<id> or --target NAME), by compare-and-swap; the checked-out branch and
 * the index and worktree are not touched. */
static int publish_branch(struct import *im, const char *name)
{
	_cleanup_free_ char *ref = NULL, *old = NULL, *msg = NULL;
	const char *prev = mstr(im->m, "imported_tip"), *expect;
	char err[GITRUN_ERR_MAX];
	int r;

	if (asprintf(&ref, "refs/heads/%s", name) < 0 || asprintf(&msg, "aisb import %s", im->id) < 0)
		return -ENOMEM;
	if (gitrun_line(&im->g, im->top, &old, "rev-parse", "--verify", "-q", ref, (char *)NULL) == 0 && old && *old) {
		/* an existing branch moves only from the base or from this workspace's last import */
		if (!streq(old, im->base) && !streq(old, im->orig_base) && !(prev && streq(old, prev)))
			return refuse(im, "branch '%s' exists at %.12s, which is neither the base nor this session's "
				      "last import; pick another: aisb import %s --target NAME", name, old, im->id);
		if (branch_checked_out(im, ref))
			return refuse(im, "branch '%s' is checked out in a worktree; use --target current there, or "
				      "another --target", name);
		expect = old;
	} else
		expect = zero_oid(im->new);
	r = call_out(im, im->top, (const char *const[]){ "update-ref", "-m", msg, ref, im->new, (char *)expect, NULL }, NULL, -1,
		     NULL, 0, NULL, false, err, sizeof(err));
	if (r != 0)
		return refuse(im, "publishing '%s' failed (it changed meanwhile?): %s", ref, err);
	mset(im->m, "imported_ref", ref);
	return 0;
}

#define REVIEW_MAX_LINES 200 /* per section; the rest is counted */

/* One hardened git in the quarantine whose binary-safe stdout is kept in @out/@len. */
static int q_out(struct import *im, const char *const *args, char **out, size_t *len)
{
	struct gitrun_call c = { .dir = im->q, .in_fd = -1, .args = args };
	int r = gitrun_call(&im->g, &c);

	if (r != 0) {
		log_error("import: git %s failed in the quarantine: %s", args[0], r < 0 ? strerror(-r) : c.err);
		gitrun_call_done(&c);
		return -EIO;
	}
	*out = TAKE_PTR(c.out);
	*len = c.out_len;
	gitrun_call_done(&c);
	return 0;
}

/* --review: what would be published, from the quarantine, after every check and the rebuild:
 * the rebuilt commits, a diffstat of base..new, and the paths outside the tree's usual ones
 * (ws_review_flag()). Only plumbing that prints no content runs (diff-tree --raw/--numstat with
 * --no-ext-diff --no-textconv, ls-tree), in aisb's own repository with git's default config: no
 * diff driver, textconv or attribute of the sandbox's can run. File contents are never printed;
 * paths and subjects are the sandbox's text: control bytes become '?', and the values passed
 * into the session are masked. */
static int review_print(struct import *im, const char *target, const struct workspace_import_opts *o)
{
	_cleanup_free_ char *raw = NULL, *ns = NULL, *tops = NULL, *text = NULL;
	_cleanup_free_ struct ws_change *ch = NULL;
	_cleanup_strv_free_ char **top = NULL;
	size_t raw_len, ns_len, tops_len, n = 0, text_len = 0, flagged = 0, shown = 0;
	long long ins = 0, del = 0;
	FILE *f;
	int r;

	if ((r = q_out(im, (const char *const[]){ "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv",
						  "--raw", (char *)im->base, im->new, NULL }, &raw, &raw_len)) < 0 ||
	    (r = q_out(im, (const char *const[]){ "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv",
						  "--numstat", (char *)im->base, im->new, NULL }, &ns, &ns_len)) < 0 ||
	    (r = q_out(im, (const char *const[]){ "ls-tree", "-z", "--name-only", (char *)im->base, NULL }, &tops, &tops_len)) < 0)
		return r;
	if (ws_raw_parse(raw, raw_len, &ch, &n) < 0 || ws_numstat_apply(ns, ns_len, ch, n) < 0)
		return log_error("import: cannot read git diff-tree's listing for the review"), -EIO;
	for (size_t off = 0; off < tops_len; off += strlen(tops + off) + 1)
		if (tops[off] && strv_push(&top, tops + off) < 0)
			return -ENOMEM;
	strv_sort(top);
	f = open_memstream(&text, &text_len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "review of session %s: %d commit(s) to publish as %s, on %.12s", im->id, im->n,
		streq(target, "current") ? mstr(im->m, "branch") : target, im->base);
	if (*im->onto)
		fprintf(f, " (rebased onto the moved branch %s)", mstr(im->m, "branch") ? mstr(im->m, "branch") : "?");
	fputc('\n', f);
	fprintf(f, "commits (rebuilt with your identity):\n");
	for (size_t i = 0; im->subjects && im->subjects[i]; i++)
		fprintf(f, "  %s\n", im->subjects[i]);
	fprintf(f, "diffstat (%.12s..%.12s):\n", im->base, im->new);
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *path = strdup(ch[i].path);
		if (!path)
			break;
		gitrun_sanitize(path);
		if (ch[i].added >= 0) {
			ins += ch[i].added;
			del += ch[i].deleted;
		}
		if (i < REVIEW_MAX_LINES) {
			if (ch[i].added < 0)
				fprintf(f, "  %c %s | binary\n", ch[i].status, path);
			else
				fprintf(f, "  %c %s | +%lld -%lld\n", ch[i].status, path, ch[i].added, ch[i].deleted);
		}
		if (ws_review_flag(&ch[i], top, strv_length(top)))
			flagged++;
	}
	if (n > REVIEW_MAX_LINES)
		fprintf(f, "  ... and %zu more\n", n - REVIEW_MAX_LINES);
	fprintf(f, "  %zu file(s) changed, %lld insertion(s)(+), %lld deletion(s)(-)\n", n, ins, del);
	fprintf(f, "outside the usual paths (submodules, .gitattributes/.gitmodules, hook-like paths, dotfiles, new "
		   "top-level entries, symlinks, executables): %zu\n", flagged);
	for (size_t i = 0; i < n && shown < REVIEW_MAX_LINES; i++) {
		const char *why = ws_review_flag(&ch[i], top, strv_length(top));
		_cleanup_free_ char *path = why ? strdup(ch[i].path) : NULL;
		if (!why || !path)
			continue;
		gitrun_sanitize(path);
		fprintf(f, "  %c %s (%s)\n", ch[i].status, path, why);
		shown++;
	}
	if (flagged > shown)
		fprintf(f, "  ... and %zu more\n", flagged - shown);
	if (!o->n_needles) {
		/* a later review: the values passed into the session are not known (never kept) */
		json_object *env = NULL;
		size_t k = json_object_object_get_ex(im->m, "env_names", &env) && json_object_is_type(env, json_type_array)
				   ? json_object_array_length(env) : 0;
		if (k) {
			fprintf(f, "WARNING: this session was passed --env");
			for (size_t i = 0; i < k; i++) {
				_cleanup_free_ char *name = strdup(json_object_get_string(json_object_array_get_idx(env, i)) ?: "");
				gitrun_sanitize(name);
				fprintf(f, " %s", name ? name : "?");
			}
			fprintf(f, ": their values are never kept, so this review cannot mask them; a value the sandbox wrote "
				   "into a subject or a path above is shown as it is (the review at the end of the run, "
				   "aisb run --review, masks them)\n");
		}
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	if (o->n_needles) {
		uint64_t found = 0;
		(void)scrub_buffer(text, text_len, o->needles, o->n_needles, &found);
	}
	fflush(stderr);
	fwrite(text, 1, text_len, stdout);
	fflush(stdout);
	return 0;
}

/* After review_print(): publish? Return: 0 yes, -ECANCELED declined, -EPERM no terminal. */
static int review_decide(struct import *im, const struct workspace_import_opts *o)
{
	int c;

	if (o->yes)
		return 0;
	c = o->confirm ? o->confirm() : -ENOTTY;
	if (c > 0)
		return 0;
	mset(im->m, "state", "review");
	json_object_object_add(im->m, "pending", json_object_new_int(im->n));
	(void)meta_save(im->dir, im->m);
	if (c == 0) {
		log_info("session %s: not published (declined at the review); the workspace is kept: aisb import %s "
			 "[--review]", im->id, im->id);
		return -ECANCELED;
	}
	log_error("session %s: not published: --review asks for your confirmation on a terminal and there is none; "
		  "run 'aisb import %s --review' on one, or add --yes; the workspace is kept", im->id, im->id);
	return -EPERM;
}

/* Stage: open. Should: load @dir's workspace.json into @im and take its lock (@wslock) against
 * a second import of the same workspace. Return: 0, -ENOENT (no workspace), -EINVAL, -EBUSY.
 * Logs on failure (but -ENOENT). */
static int import_open(struct import *im, const char *dir, int *wslock)
{
	_cleanup_free_ char *lp = NULL;

	im->dir = dir;
	im->m = meta_load(dir);
	if (!im->m)
		return -ENOENT;
	im->top = mstr(im->m, "project");
	im->base = im->orig_base = mstr(im->m, "base");
	if (!im->top || !im->base || !gitrun_is_oid(im->base))
		return log_error("workspace '%s' has no usable workspace.json", dir), -EINVAL;
	lp = path_join(dir, "workspace.json");
	*wslock = lp ? open(lp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	if (*wslock < 0 || flock(*wslock, LOCK_EX | LOCK_NB) < 0)
		return log_error("workspace '%s' is being imported by another aisb", im->id), -EBUSY;
	return 0;
}

/* The branch the import publishes: --target, else the one recorded, else aisb/ID (in @buf);
 * "current" is the branch checked out. Return: 0, -EINVAL (said), -ENOMEM. */
static int import_target(const struct import *im, const struct workspace_import_opts *o, const char **target,
			 char **buf)
{
	*target = o->target ? o->target : mstr(im->m, "target");
	if (*target && !streq(*target, "current") && !ws_branch_name_valid(*target))
		return log_error("invalid --target '%s'", *target), -EINVAL;
	if (!*target) {
		if (asprintf(buf, "aisb/%s", im->id) < 0)
			return -ENOMEM;
		*target = *buf;
	}
	return 0;
}

/* Stage 1: the export. Should: run the export sandbox @ex into a fresh im->out, with the
 * commits rebased onto the host branch's tip when it moved and that is asked (always for
 * --target current: it can only fast-forward), record whether it left uncommitted work
 * (@dirty), and open the bundle it wrote. Mustn't: trust anything of the export but a regular
 * file as the bundle. @bfd: the bundle's fd, or -1 when there are no new commits. Return: 0, or
 * -errno (-EPERM a refusal, recorded). Logs on failure. */
static int import_export(struct import *im, const struct workspace_import_opts *o, const char *target,
			 workspace_exporter ex, bool *dirty, int *bfd)
{
	_cleanup_free_ char *repo = path_join(im->dir, "repo"), *onto_dir = NULL;
	bool checkpoint = o->uncommitted || json_object_get_boolean(json_object_object_get(im->m, "import_uncommitted"));
	int r;

	im->out = path_join(im->dir, "export");
	if (!repo || !im->out)
		return -ENOMEM;
	(void)rm_rf(im->out);
	if (mkdir(im->out, 0700) < 0)
		return log_error_errno(-errno, "cannot create '%s': %m", im->out);
	if ((o->rebase || streq(target, "current")) && (r = rebase_prepare(im, o->rebase, &onto_dir)) < 0)
		return r;
	r = ex(&(struct workspace_export){ .repo = repo, .out = im->out, .base = im->base, .checkpoint = checkpoint,
					   .script = workspace_export_script, .onto = *im->onto ? im->onto : NULL,
					   .onto_dir = onto_dir });
	if (onto_dir)
		(void)rm_rf(onto_dir);
	if ((r == WORKSPACE_EXPORT_CONFLICT || r == WORKSPACE_EXPORT_NOT_A_LINE) && *im->onto)
		return refuse_conflict(im, r == WORKSPACE_EXPORT_NOT_A_LINE);
	if (r != 0)
		return refuse(im, "the export sandbox failed (exit %d; its log: %s/log)", r, im->out);
	*dirty = export_dirty(im->out);
	json_object_object_add(im->m, "dirty", json_object_new_boolean(*dirty));
	*bfd = open_out_file(im->out, "export.bundle");
	if (*bfd < 0 && *bfd != -ENOENT)
		return refuse(im, "the export left something other than a regular file as its bundle");
	if (*bfd < 0)
		*bfd = -1;
	return 0;
}

/* Stages 2-4: validate in the quarantine, rebuild, publish; on the branch's new tip when the
 * commits were rebased (the bundle's prerequisite, the parent of the first rebuilt commit, what
 * --target current fast-forwards from). @lock receives the worktree's lock. Return: 0 or -errno
 * (-EPERM refused, -ECANCELED declined at the review). Logs on failure. */
static int import_publish(struct import *im, const char *state, const struct workspace_import_opts *o,
			  const char *target, int bfd, int *lock)
{
	int r;

	if (*im->onto)
		im->base = im->onto;
	mset(im->m, "rebased_onto", *im->onto ? im->onto : NULL);
	r = quarantine_create(im);
	if (r >= 0)
		r = import_bundle(im, bfd);
	if (r >= 0)
		r = import_validate(im);
	if (r >= 0) {
		json_object_object_add(im->m, "pending", json_object_new_int(im->n));
		r = import_rebuild(im);
	}
	if (r >= 0 && o->review && (r = review_print(im, target, o)) >= 0)
		r = review_decide(im, o);
	if (r >= 0 && (*lock = worktree_lock(im, state)) < 0)
		r = *lock;
	if (r >= 0) {
		/* the rebuilt objects into the project's store: fetched from the quarantine, where only
		 * aisb's commits and the sandbox's checked trees are reachable from refs/aisb/new */
		r = gitrun_ok(&im->g, im->top, "import: fetching the rebuilt commits", "fetch", "-q", "--no-tags",
			      "--no-write-fetch-head", "--no-recurse-submodules", im->q, "refs/aisb/new", (char *)NULL);
	}
	if (r >= 0)
		r = streq(target, "current") ? publish_current(im) : publish_branch(im, target);
	return r;
}

/* Records the outcome @r in workspace.json (imported, or refused: a declined or unconfirmed
 * review keeps the state "review") and says what was imported. Logs. */
static void import_record(struct import *im, const struct workspace_import_opts *o, const char *target, bool dirty,
			  int r)
{
	const char *branch = streq(target, "current") ? mstr(im->m, "branch") : target;

	if (r < 0) {
		if (r != -EPERM && r != -ECANCELED) {
			mset(im->m, "state", "refused");
			(void)meta_save(im->dir, im->m);
		}
		return;
	}
	mset(im->m, "state", "imported");
	mset(im->m, "imported_tip", im->new);
	json_object_object_add(im->m, "imported_commits", json_object_new_int(im->n));
	json_object_object_add(im->m, "pending", json_object_new_int(0));
	mset(im->m, "message", NULL);
	(void)meta_save(im->dir, im->m);
	(void)rm_rf(im->q);
	if (!o->quiet)
		log_info("imported %d commit(s) of session %s as %s (%.12s..%.12s, rebuilt with your identity%s%s); "
			 "review: git log %.12s..%s", im->n, im->id, branch, im->base, im->new,
			 *im->onto ? ", rebased onto the moved branch " : "", *im->onto ? mstr(im->m, "branch") : "",
			 im->base, branch);
	if (dirty && !o->quiet)
		log_info("session %s left uncommitted work in its workspace: aisb import %s --import-uncommitted "
			 "takes it as a checkpoint commit", im->id, im->id);
}

int workspace_import(const char *state, const char *id, const struct workspace_import_opts *o,
		     workspace_exporter ex, env_getter get)
{
	struct import im = { .id = id };
	_cleanup_free_ char *dir = ws_path(state, id, NULL), *target_buf = NULL;
	_cleanup_close_ int bfd = -1, lock = -1, wslock = -1;
	const char *target = NULL;
	bool dirty = false;
	int r;

	if (!dir)
		return -ENOMEM;
	r = import_open(&im, dir, &wslock);
	if (r >= 0)
		r = import_target(&im, o, &target, &target_buf);
	if (r >= 0 && gitrun_init(&im.g, im.top, GITRUN_IDENT, get) < 0)
		r = -EINVAL;
	if (r >= 0)
		r = import_export(&im, o, target, ex, &dirty, &bfd);
	if (r >= 0 && bfd < 0) {
		/* no new commits */
		json_object_object_add(im.m, "pending", json_object_new_int(0));
		mset(im.m, "state", dirty ? "uncommitted" : "imported");
		(void)meta_save(dir, im.m);
		if (!o->quiet)
			log_info("session %s: no new commits to import%s", id,
				 dirty ? "; uncommitted work is left in the workspace: aisb import ID --import-uncommitted"
				       " takes it as a checkpoint commit" : "");
		import_done(&im);
		return 0;
	}
	if (r < 0) {
		import_done(&im);
		return r;
	}
	r = import_publish(&im, state, o, target, bfd, &lock);
	import_record(&im, o, target, dirty, r);
	import_done(&im);
	return r;
}

int workspace_finish(const struct aisb_plan *p, const struct aisb_session *ss, workspace_exporter ex, env_getter get,
		     int (*confirm)(void))
{
	const struct workspace_plan *w = p->workspace;
	struct scrub_needle nd[SCRUB_MAX_NEEDLES];
	size_t n_short = 0, n_nd = 0;
	json_object *m;
	int r;

	if (!w || !ss->workspace_dir)
		return 0;
	if (w->review)
		n_nd = scrub_needles(p, nd, &n_short);
	r = workspace_import(ss->state_dir, ss->id,
			     &(struct workspace_import_opts){ .uncommitted = w->import_uncommitted, .review = w->review,
							      .confirm = confirm, .needles = nd, .n_needles = n_nd },
			     ex, get);
	if (r < 0 && r != -ECANCELED)
		return r;
	m = meta_load(ss->workspace_dir);
	if (m && streq(mstr(m, "state") ? mstr(m, "state") : "", "imported") &&
	    !json_object_get_boolean(json_object_object_get(m, "dirty")) && !p->keep) {
		r = rm_rf(ss->workspace_dir);
		if (r < 0)
			log_warn_errno(r, "cannot remove the workspace '%s': %m", ss->workspace_dir);
	} else
		log_info("workspace kept: %s (aisb inspect %s; aisb clean removes it once imported, or with --discard)",
			 ss->workspace_dir, ss->id);
	json_object_put(m);
	return 0;
}

/* ---- ps, inspect, clean ------------------------------------------------------------------ */

char **workspace_ids(const char *state)
{
	_cleanup_free_ char *root = path_join(state, "workspaces");
	char **v = NULL;
	struct dirent *de;
	DIR *d;

	if (!root || !(d = opendir(root)))
		return NULL;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strv_push(&v, de->d_name) < 0)
			break;
	closedir(d);
	strv_sort(v);
	return v;
}

/* "3", "0", or "?" when no export has counted them. */
static void pending_str(json_object *m, char *buf, size_t n)
{
	long long k = mint(m, "pending", -1);
	const char *st = mstr(m, "state");

	if (k < 0)
		snprintf(buf, n, "?");
	else
		snprintf(buf, n, "%lld%s", k, st && (streq(st, "uncommitted") ||
						     json_object_get_boolean(json_object_object_get(m, "dirty"))) ? "+dirty" : "");
}

void workspace_print_table(const char *state, bool (*live)(const char *state, const char *id), FILE *f)
{
	_cleanup_strv_free_ char **ids = workspace_ids(state);
	bool header = false;

	for (size_t i = 0; ids && ids[i]; i++) {
		_cleanup_free_ char *dir = ws_path(state, ids[i], NULL);
		json_object *m = dir ? meta_load(dir) : NULL;
		char pend[32];
		const char *st;

		if (!m)
			continue;
		if (!header) {
			fprintf(f, "\n%-12s %-11s %-12s %-8s %-16s %s\n", "WORKSPACE", "STATE", "BASE", "PENDING", "TARGET",
				"PROJECT");
			header = true;
		}
		st = live(state, ids[i]) ? "live" : mstr(m, "state") ? mstr(m, "state") : "?";
		pending_str(m, pend, sizeof(pend));
		fprintf(f, "%-12s %-11s %-12.12s %-8s %-16s %s\n", ids[i], st, mstr(m, "base") ? mstr(m, "base") : "?",
			live(state, ids[i]) ? "?" : pend, mstr(m, "target") ? mstr(m, "target") : "aisb/<id>",
			mstr(m, "project") ? mstr(m, "project") : "?");
		json_object_put(m);
	}
}

int workspace_describe(const char *state, const char *id, FILE *f, struct json_object **json_out)
{
	_cleanup_free_ char *dir = ws_path(state, id, NULL);
	json_object *m = dir ? meta_load(dir) : NULL;
	char pend[32];

	if (!m)
		return -ENOENT;
	if (json_out) {
		json_object_object_add(m, "dir", json_object_new_string(dir));
		json_object_object_add(m, "mode", json_object_new_string("clone"));
		*json_out = m;
		return 0;
	}
	pending_str(m, pend, sizeof(pend));
	fprintf(f, "workspace:  clone in %s\n", dir);
	fprintf(f, "  base:     %s%s%s%s\n", mstr(m, "base") ? mstr(m, "base") : "?", mstr(m, "branch") ? " (branch " : "",
		mstr(m, "branch") ? mstr(m, "branch") : "", mstr(m, "branch") ? ")" : "");
	fprintf(f, "  state:    %s%s%s\n", mstr(m, "state") ? mstr(m, "state") : "?", mstr(m, "message") ? ": " : "",
		mstr(m, "message") ? mstr(m, "message") : "");
	fprintf(f, "  pending:  %s commit(s) not imported%s\n", pend,
		streq(pend, "?") ? " (counted when the session ends, or by aisb import)" : "");
	fprintf(f, "  target:   %s\n", mstr(m, "target") ? mstr(m, "target") : "aisb/<session>");
	if (mstr(m, "imported_ref"))
		fprintf(f, "  imported: %lld commit(s) as %s at %s\n", mint(m, "imported_commits", 0), mstr(m, "imported_ref"),
			mstr(m, "imported_tip") ? mstr(m, "imported_tip") : "?");
	json_object_put(m);
	return 0;
}

int workspace_clean(const char *state, bool discard, bool (*live)(const char *state, const char *id))
{
	_cleanup_strv_free_ char **ids = workspace_ids(state);
	int kept = 0;

	for (size_t i = 0; ids && ids[i]; i++) {
		_cleanup_free_ char *dir = ws_path(state, ids[i], NULL);
		json_object *m = dir ? meta_load(dir) : NULL;
		const char *st = m ? mstr(m, "state") : NULL;
		bool done = st && streq(st, "imported") && !json_object_get_boolean(json_object_object_get(m, "dirty"));
		int r;

		if (!dir)
			break;
		if (live(state, ids[i])) {
			printf("kept workspace %s: its session is live\n", ids[i]);
		} else if (!done && !discard) {
			char pend[32];
			pending_str(m, pend, sizeof(pend));
			printf("kept workspace %s: %s commit(s) not imported (state %s); aisb import %s, or aisb clean "
			       "--discard to drop them\n", ids[i], pend, st ? st : "unknown", ids[i]);
			kept++;
		} else if ((r = rm_rf(dir)) < 0)
			log_error_errno(r, "cannot remove workspace '%s': %m", dir);
		else
			printf("removed workspace %s%s\n", ids[i], done ? "" : " (discarded: its work was not imported)");
		json_object_put(m);
	}
	return kept;
}
