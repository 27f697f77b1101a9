// SPDX-License-Identifier: GPL-2.0-or-later
/* autophase.c — the pipeline driver: units inside aisb, guards and delivery on the host */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "git/gitguard.h"
#include "git/gitrun.h"
#include "pipeline/autophase-internal.h"
#include "pipeline/autophase.h"
#include "util/log.h"
#include "util/spawn.h"
#include "util/util.h"

#define MAX_GIT_ARGS 32

struct ap {
	const struct autophase_options *o;
	struct gitrun g;
	const char *cwd;        /* where git runs until the top is known */
	const char *index_file; /* GIT_INDEX_FILE of the calls, or NULL */
	char *top, *gitdir, *commondir;
	char *ref;      /* refs/heads/BRANCH that HEAD named before the first unit */
	char *branch;   /* BRANCH */
	char *tip;      /* its commit: before the first unit, then each delivered one */
	char *name, *email;
	char *push_url;  /* the push target, resolved before the first unit (resolve_push_url()) */
	char *pushed;    /* the commit the push target was last seen to take in this run, or NULL */
	char *tried;     /* the commit of the last push attempt, or NULL */
	enum autophase_launcher_source lsrc;
	/* a host launcher (AUTOPHASE_LAUNCHER_HOST): its name, the rc file defining it (NULL for a
	 * PATH program), what it is, whether it forwards its arguments */
	char *hl_name, *hl_rc, *hl_prog;
	const char *hl_kind; /* "function", "alias", "program" */
	bool hl_forwards;
	const char *prompt;  /* the agent's prompt while run_agent() runs it, else NULL */
	char **launcher; /* the launcher's words */
	char *lfile;     /* the launcher's program when it is a file of the project, relative */
	char *ltext, *vtext; /* the launcher file's and validate.sh's content before the first unit */
	const char *vproblem; /* what is wrong with validate.sh (for --status), or NULL */
	size_t llen, vlen;
	struct gitguard_snapshot *snap;
	int capture_fd;  /* a unit's stdout and stderr go here when >= 0 (run_gate()) */
	unsigned round;  /* the fix round of the unit running (AISB_PHASE_ROUND) */
	char **phases;   /* phase names, in order */
	char **done;     /* per phase: the commit delivering it, or NULL */
	size_t n;
	/* --library (run_library()) */
	char **lib_args;    /* the arguments of the library's pi while its agent runs, else NULL */
	char *lib_phase;    /* the phase the library last validated, or NULL */
	char **lib_before;  /* the quarantines before the library started */
	struct timespec lib_since; /* when it started (the work tree's check at delivery) */
	unsigned lib_checks;
};

static void done_free(struct ap *a)
{
	for (size_t i = 0; a->done && i < a->n; i++)
		free(a->done[i]);
	free(a->done);
	a->done = NULL;
}

static void ap_free(struct ap *a)
{
	free(a->top);
	free(a->gitdir);
	free(a->commondir);
	free(a->ref);
	free(a->branch);
	free(a->tip);
	free(a->name);
	free(a->email);
	free(a->push_url);
	free(a->pushed);
	free(a->tried);
	gitrun_done(&a->g);
	strv_free(a->launcher);
	free(a->hl_name);
	free(a->hl_rc);
	free(a->hl_prog);
	free(a->lfile);
	free(a->ltext);
	free(a->vtext);
	gitguard_snapshot_free(a->snap);
	done_free(a);
	strv_free(a->phases);
	free(a->lib_phase);
	strv_free(a->lib_before);
}

/* Prints git's stderr, redacted and sanitized, one line per message. */
static void log_git_stderr(const char *err)
{
	_cleanup_free_ char *red = gitrun_message(err);
	char *line = red, *nl;

	for (; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (*line)
			log_error("  git: %s", line);
	}
}

static void chomp(char *s)
{
	size_t n = s ? strlen(s) : 0;
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
}

enum {
	GIT_QUIET = 1 << 0,  /* a failure is the caller's to judge (not logged) */
	GIT_REMOTE = 1 << 1, /* the push: network transports, the user's global config (gitrun.h) */
};

/* Runs host git (gitrun.h) in the work tree with the argument list (NULL-terminated), as the
 * driver's identity. Return: 0, git's non-zero status (logged unless GIT_QUIET), or -errno
 * (logged). @out receives stdout, chomped, when non-NULL. */
static int gitv(struct ap *a, unsigned flags, char **out, const char *first, ...)
{
	const char *args[MAX_GIT_ARGS + 1];
	_cleanup_free_ char *idx = NULL, *what = NULL;
	const char *env[2] = { NULL, NULL };
	struct gitrun_call c = { .dir = a->g.bare ? a->g.bare : a->top ? a->top : a->cwd, .args = args, .env = env,
				 .in_fd = -1, .ident = true, .remote = flags & GIT_REMOTE,
				 .user_config = flags & GIT_REMOTE };
	size_t n = 0;
	va_list ap;
	int r;

	va_start(ap, first);
	for (const char *s = first; s; s = va_arg(ap, const char *)) {
		assert(n < MAX_GIT_ARGS); /* a programmer error: the calls below are fixed lists */
		args[n++] = s;
	}
	va_end(ap);
	args[n] = NULL;
	if (a->index_file && asprintf(&idx, "GIT_INDEX_FILE=%s", a->index_file) < 0)
		return -ENOMEM;
	env[0] = idx;
	r = gitrun_call(&a->g, &c);
	if (r < 0) {
		gitrun_call_done(&c);
		return log_error_errno(r, "cannot run git%s: %m", r == -E2BIG ? " (its output is over 64 MiB)" : "");
	}
	if (r > 0) {
		if (!(flags & GIT_QUIET)) {
			what = gitrun_message(first);
			log_error("git %s failed (exit %d):", what ? what : "", r);
			log_git_stderr(c.err);
		}
		gitrun_call_done(&c);
		return r;
	}
	if (out) {
		chomp(c.out);
		*out = TAKE_PTR(c.out);
	}
	gitrun_call_done(&c);
	return 0;
}
#define git(a, out, ...) gitv(a, 0, out, __VA_ARGS__, (const char *)NULL)
#define git_quiet(a, out, ...) gitv(a, GIT_QUIET, out, __VA_ARGS__, (const char *)NULL)
#define git_remote(a, out, ...) gitv(a, GIT_REMOTE, out, __VA_ARGS__, (const char *)NULL)

/* Reads a project file (relative to the top) without following a symlink at its last
 * component, bounded. Return: 0, -ENOENT, -ELOOP (a symlink), -EINVAL (not a regular file),
 * -EFBIG, -errno. Does not log. */
static int read_project_file(const struct ap *a, const char *rel, char **text, size_t *len, mode_t *mode)
{
	_cleanup_free_ char *p = path_join(a->top, rel);
	struct stat st;
	int r;

	if (!p)
		return -ENOMEM;
	r = read_regular_at(AT_FDCWD, p, AUTOPHASE_MAX_FILE, text, len, &st);
	if (r >= 0 && mode)
		*mode = st.st_mode;
	return r;
}

static const char *file_error(int r)
{
	return r == -ELOOP ? "a symlink (the pipeline's files must be the project's own)"
	       : r == -EINVAL ? "not a regular file" : r == -EFBIG ? "larger than 1 MiB" : strerror(-r);
}

/* Step 1: the work tree, its git dirs, the branch HEAD names and its commit. */
static int open_repo(struct ap *a)
{
	_cleanup_free_ char *cwd = getcwd(NULL, 0), *head = NULL, *top = NULL;
	int r;

	if (!cwd)
		return log_error_errno(-errno, "cannot get the current directory: %m"), AISB_EXIT_FAILED;
	a->cwd = cwd;
	r = git_quiet(a, &top, "rev-parse", "--show-toplevel");
	a->cwd = NULL;
	if (r != 0 || !*top) {
		return log_error("autophase: '%s' is not in a git work tree (run it in the project, which needs "
				 ".agents/phases/)", cwd),
		       AISB_EXIT_POLICY;
	}
	a->top = TAKE_PTR(top);
	if (git(a, &a->gitdir, "rev-parse", "--absolute-git-dir") != 0 ||
	    git(a, &a->commondir, "rev-parse", "--path-format=absolute", "--git-common-dir") != 0)
		return AISB_EXIT_FAILED;
	r = git_quiet(a, &head, "symbolic-ref", "-q", "HEAD");
	if (r != 0 || strncmp(head, "refs/heads/", 11) != 0)
		return log_error("autophase: HEAD is not on a branch (detached): check out the branch the phases "
				 "are to be committed on"),
		       AISB_EXIT_POLICY;
	a->ref = TAKE_PTR(head);
	a->branch = strdup(a->ref + 11);
	if (!a->branch)
		return AISB_EXIT_FAILED;
	if (git_quiet(a, &a->tip, "rev-parse", "-q", "--verify", "HEAD^{commit}") != 0)
		return log_error("autophase: branch '%s' has no commit yet: commit the pipeline (.agents/) first",
				 a->branch),
		       AISB_EXIT_POLICY;
	return 0;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The phase names in .agents/phases/, sorted; entries that are not NN-name.md are listed in
 * @ignored. Return: 0 or an exit code. Logs on failure. */
static int list_phases(struct ap *a, char ***out, char ***ignored)
{
	_cleanup_free_ char *dir = path_join(a->top, AUTOPHASE_DIR);
	_cleanup_strv_free_ char **v = NULL;
	_cleanup_close_ int fd = -1;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	if (!dir)
		return AISB_EXIT_FAILED;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return log_error_errno(-errno, "autophase: cannot open '%s': %m (a pipeline is .agents/phases/NN-name.md "
				       "files, run in name order)", dir),
		       AISB_EXIT_POLICY;
	d = fdopendir(fd);
	if (!d)
		return AISB_EXIT_FAILED;
	fd = -1; /* owned by d; NOLINT(clang-analyzer-deadcode.DeadStores): read by its _cleanup_close_, which clang-analyzer does not model */
	while ((de = readdir(d))) {
		char name[AUTOPHASE_MAX_NAME + 1];
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		if (!autophase_phase_name(de->d_name, name)) {
			if (ignored)
				(void)strv_push(ignored, de->d_name);
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
			closedir(d);
			return log_error("autophase: '%s/%s' is not a regular file (a symlink is refused: the phase "
					 "is the project's own file)", dir, de->d_name),
			       AISB_EXIT_POLICY;
		}
		if (strv_length(v) >= AUTOPHASE_MAX_PHASES) {
			closedir(d);
			return log_error("autophase: more than %d phases in '%s'", AUTOPHASE_MAX_PHASES, dir), AISB_EXIT_POLICY;
		}
		if (strv_push(&v, name) < 0) {
			closedir(d);
			return AISB_EXIT_FAILED;
		}
	}
	closedir(d);
	if (v)
		qsort(v, strv_length(v), sizeof(*v), cmp_str);
	*out = TAKE_PTR(v);
	return 0;
}

/* Which phases the branch already holds (their Aisb-Phase trailer, first-parent history). */
static int scan_delivered(struct ap *a)
{
	_cleanup_free_ char *log = NULL;
	char max[32];

	done_free(a);
	a->done = calloc(a->n ? a->n : 1, sizeof(char *));
	if (!a->done)
		return AISB_EXIT_FAILED;
	snprintf(max, sizeof(max), "--max-count=%d", AUTOPHASE_MAX_HISTORY);
	if (git(a, &log, "log", "--first-parent", max,
		"--format=%H%x09%(trailers:key=" AUTOPHASE_TRAILER ",valueonly,separator=%x2C)", a->tip) != 0)
		return AISB_EXIT_FAILED;
	return autophase_parse_history(log, a->phases, a->n, a->done) < 0 ? AISB_EXIT_FAILED : 0;
}

/* The rc probe's and the units' bash: no rc of its own (--norc --noprofile), interactive (-i:
 * ~/.bashrc guards on $-), `exit`, `logout` and `exec` neutered while the one file is sourced
 * (its output to /dev/null), then either the definition printed (the probe) or the launcher run
 * with the positional arguments (a unit: eval of the checked name, so an alias expands). Each
 * unit's bash starts with stderr on /dev/null (no job-control chatter, and no terminal to take:
 * bash finds its tty on stderr) and gets it back from fd 4. The rc path and the name are
 * arguments ($1, $2), never text of the script. */
static const char probe_script[] =
	"exit() { :; }; logout() { :; }; exec() { :; }\n"
	". \"$1\" >/dev/null 2>&1 </dev/null\n"
	"unset -f exit logout exec\n"
	"case $(type -t -- \"$2\") in\n"
	"function) echo function; declare -f -- \"$2\" ;;\n"
	"alias) echo alias ;;\n"
	"*) echo none ;;\n"
	"esac\n";
static const char unit_script[] =
	"exec 2>&4 4>&-\n"
	"exit() { :; }; logout() { :; }; exec() { :; }\n"
	". \"$1\" >/dev/null 2>&1 </dev/null\n"
	"unset -f exit logout exec\n"
	"n=$2; shift 2\n"
	"eval \"$n\"' \"$@\"'\n";
#define BASH "/bin/bash"

/* A child spawn() could not start (@r): logged, and the exit code the forks it replaced gave:
 * 126 when the program cannot be executed, 125 for a step before (chdir, dup2). */
static int start_failed(int r, const char *what)
{
	log_error_errno(r, "autophase: cannot start %s: %m", what);
	return r == -ENOENT || r == -EACCES || r == -ENOEXEC ? AISB_EXIT_NOEXEC : AISB_EXIT_FAILED;
}

/* Sources @rc in a throwaway interactive bash (setsid: no controlling terminal; stdin, stderr
 * /dev/null; killed after AUTOPHASE_PROBE_SECONDS) and asks what @name is there. Never calls it.
 * Return: 1 found (@kind, @forwards set), 0 not defined there, -errno. Does not log. */
static int probe_rc(const char *rc, const char *name, const char **kind, bool *forwards)
{
	_cleanup_free_ char *out = malloc(AUTOPHASE_PROBE_MAX + 1);
	int p[2];
	size_t len = 0;
	pid_t pid;

	if (!out)
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	{
		char *const argv[] = { (char *)"bash", (char *)"--norc", (char *)"--noprofile", (char *)"-i",
				       (char *)"-c", (char *)probe_script, (char *)"aisb-probe", (char *)rc, (char *)name,
				       NULL };
		const struct spawn_fd fds[] = { { SPAWN_DEVNULL, 0 }, { p[1], 1 }, { SPAWN_DEVNULL, 2 } };
		int r = spawn(&(struct spawn_opts){ .path = BASH, .argv = argv, .fds = fds, .n_fds = ELEMENTSOF(fds),
						    .new_session = true },
			      &pid);

		close(p[1]);
		if (r < 0) {
			close(p[0]);
			/* a bash that cannot be run defines nothing (the fork this replaced: exit 127) */
			return r == -ENOENT || r == -EACCES || r == -ENOEXEC ? 0 : r;
		}
	}
	for (int waited = 0;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		int n = poll(&pf, 1, 1000);
		ssize_t k;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			if (++waited >= AUTOPHASE_PROBE_SECONDS) {
				kill(-pid, SIGKILL);
				break;
			}
			continue;
		}
		k = read(p[0], out + len, AUTOPHASE_PROBE_MAX - len);
		if (k <= 0)
			break;
		len += (size_t)k;
		if (len >= AUTOPHASE_PROBE_MAX)
			break;
	}
	close(p[0]);
	kill(-pid, SIGKILL); /* whatever the rc file left running in its session */
	(void)spawn_wait(pid);
	out[len] = 0;
	/* the rc file's own output went to /dev/null; the answer is the first line (a background job
	 * the file started and that prints first makes it "not found", never a wrong definition) */
	if (strncmp(out, "function\n", 9) == 0) {
		*kind = "function";
		*forwards = autophase_forwards_args(out + 9);
		explicit_bzero(out, len); /* the body may hold how a token is fetched */
		return 1;
	}
	if (strncmp(out, "alias\n", 6) == 0) {
		*kind = "alias";
		*forwards = true; /* the shell appends the arguments to an alias */
		return 1;
	}
	return 0;
}

/* A program of the driver's PATH, as an absolute path (the seed captures it so: a name
 * resolved later could be something else). Return: malloc'd or NULL. */
static char *path_program(const char *a_path, const char *name)
{
	const char *path = a_path;

	for (const char *e = path ? path : ""; *e;) {
		size_t n = strcspn(e, ":");
		_cleanup_free_ char *dir = strndup(e, n), *p = NULL;
		e += n + (e[n] == ':');
		if (!dir || dir[0] != '/' || !(p = path_join(dir, name)))
			continue;
		if (access(p, X_OK) == 0)
			return TAKE_PTR(p);
	}
	return NULL;
}

/* The host launcher @name: defined in a file of ~/.bashrc.d/, ~/.bashrc, ~/.bash_aliases or
 * ~/.profile (the first file that defines it), else a PATH program, else a path. Never called
 * here. Return: 1 found, 0 not, or an exit code < 0 negated. Logs only a refusal. */
static int find_host_launcher(struct ap *a, const char *name)
{
	static const char *const files[] = AUTOPHASE_RC_FILES;
	_cleanup_strv_free_ char **rcs = NULL;
	const char *home = a->o->home;
	int r;

	if (strchr(name, '/')) {
		if (!path_is_absolute(name) || access(name, X_OK) < 0)
			return log_error("autophase: the launcher '%s' is not an executable absolute path", name),
			       -AISB_EXIT_POLICY;
		if (!(a->hl_prog = strdup(name)) || !(a->hl_name = strdup(name)))
			return -AISB_EXIT_FAILED;
		a->hl_kind = "program";
		a->hl_forwards = true;
		return 1;
	}
	if (!autophase_launcher_name_ok(name))
		return log_error("autophase: '%s' cannot be a launcher's name (letters, digits, '_.:+-')", name),
		       -AISB_EXIT_POLICY;
	if (home && path_is_absolute(home)) {
		_cleanup_free_ char *dir = path_join(home, AUTOPHASE_RC_DIR);
		DIR *d = dir ? opendir(dir) : NULL;
		struct dirent *de;
		_cleanup_strv_free_ char **names = NULL;
		while (d && (de = readdir(d)))
			if (de->d_name[0] != '.' && strv_push(&names, de->d_name) < 0)
				break;
		if (d)
			closedir(d);
		if (names)
			qsort(names, strv_length(names), sizeof(*names), cmp_str);
		for (size_t i = 0; names && names[i]; i++) {
			char *p = path_join(dir, names[i]);
			if (!p || strv_push_take(&rcs, p) < 0)
				return -AISB_EXIT_FAILED;
		}
		for (size_t i = 0; i < ELEMENTSOF(files); i++) {
			char *p = path_join(home, files[i]);
			if (!p || strv_push_take(&rcs, p) < 0)
				return -AISB_EXIT_FAILED;
		}
	}
	for (size_t i = 0; rcs && rcs[i]; i++) {
		struct stat st;
		if (stat(rcs[i], &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		r = probe_rc(rcs[i], name, &a->hl_kind, &a->hl_forwards);
		if (r < 0)
			return log_error_errno(r, "autophase: cannot probe '%s' for the launcher '%s': %m", rcs[i], name),
			       -AISB_EXIT_FAILED;
		if (r > 0) {
			if (!(a->hl_rc = strdup(rcs[i])) || !(a->hl_name = strdup(name)))
				return -AISB_EXIT_FAILED;
			return 1;
		}
	}
	if ((a->hl_prog = path_program(a->o->path, name))) {
		if (!(a->hl_name = strdup(name)))
			return -AISB_EXIT_FAILED;
		a->hl_kind = "program";
		a->hl_forwards = true;
		return 1;
	}
	return 0;
}

/* The host launcher mode: found, forwarding its arguments. Return: 0 or an exit code. Logs. */
static int use_host_launcher(struct ap *a, const char *name, bool quiet_missing)
{
	int r = find_host_launcher(a, name);

	if (r < 0)
		return -r;
	if (r == 0) {
		if (quiet_missing)
			return AISB_EXIT_POLICY;
		return log_error("autophase: no launcher '%s': it is not a function or alias in ~/.bashrc.d/*, ~/.bashrc, "
				 "~/.bash_aliases or ~/.profile, nor a program on PATH", name),
		       AISB_EXIT_POLICY;
	}
	a->lsrc = AUTOPHASE_LAUNCHER_HOST;
	if (strv_push(&a->launcher, a->hl_name) < 0)
		return AISB_EXIT_FAILED;
	return 0;
}

/* The preflight of a host launcher: one that drops its arguments would run the image's default
 * harness with no prompt (the seed refuses it). Nothing is called. Return: 0 or 78. Logs. */
static int check_host_launcher(const struct ap *a)
{
	if (a->lsrc != AUTOPHASE_LAUNCHER_HOST || a->hl_forwards)
		return 0;
	return log_error("autophase: preflight: the launcher '%s' (a %s in %s) drops its arguments (it never uses "
			 "\"$@\"): the units would run your sandbox's default command with no prompt. End its aisb "
			 "command line with \"$@\"", a->hl_name, a->hl_kind, a->hl_rc ? a->hl_rc : "PATH"),
	       AISB_EXIT_POLICY;
}

/* Step 2: the launcher (--launcher, the config's autophase_launcher, .agents/launcher) and the
 * validation gate, with the content of each file recorded for the between-units check. */
static int find_pipeline(struct ap *a)
{
	const struct autophase_options *o = a->o;
	const char *cmd = NULL;
	mode_t mode = 0;
	int r;

	if (o->pi_cmd)
		return use_host_launcher(a, o->pi_cmd, false);
	if (o->launcher) {
		a->lsrc = AUTOPHASE_LAUNCHER_FLAG;
		cmd = o->launcher;
	} else if (o->config_launcher) {
		a->lsrc = AUTOPHASE_LAUNCHER_CONFIG;
		cmd = o->config_launcher;
	} else {
		r = read_project_file(a, AUTOPHASE_LAUNCHER, &a->ltext, &a->llen, &mode);
		if (r == -ENOENT) {
			a->lsrc = AUTOPHASE_LAUNCHER_NONE;
			r = use_host_launcher(a, AUTOPHASE_DEFAULT_PI_CMD, true);
			if (r != AISB_EXIT_POLICY || a->lsrc == AUTOPHASE_LAUNCHER_HOST)
				return r;
			return log_error("autophase: no launcher: define '%s' (a function or alias in ~/.bashrc.d/*, "
					 "~/.bashrc, ~/.bash_aliases or ~/.profile that runs aisb with \"$@\"), or pass "
					 "--pi-cmd NAME, --launcher CMD, set 'autophase_launcher = CMD' in %s, or make %s/%s "
					 "an executable that starts your agent", AUTOPHASE_DEFAULT_PI_CMD,
					 o->config_path ? o->config_path : "your aisb config", a->top, AUTOPHASE_LAUNCHER),
			       AISB_EXIT_POLICY;
		}
		if (r < 0)
			return log_error("autophase: '%s/%s': %s", a->top, AUTOPHASE_LAUNCHER, file_error(r)), AISB_EXIT_POLICY;
		if (!(mode & 0111))
			return log_error("autophase: '%s/%s' is not executable (chmod +x it)", a->top, AUTOPHASE_LAUNCHER),
			       AISB_EXIT_POLICY;
		a->lsrc = AUTOPHASE_LAUNCHER_FILE;
		cmd = AUTOPHASE_LAUNCHER;
	}
	r = autophase_split_launcher(cmd, &a->launcher);
	if (r < 0)
		/* never the command itself: it may hold a secret */
		return log_error("autophase: the launcher command from %s is %s", a->lsrc == AUTOPHASE_LAUNCHER_FLAG
				 ? "--launcher" : "the config's autophase_launcher",
				 r == -E2BIG ? "longer than 64 words" : "empty or holds a control character"),
		       AISB_EXIT_POLICY;
	if (a->lsrc == AUTOPHASE_LAUNCHER_FILE) {
		if (!(a->lfile = strdup(AUTOPHASE_LAUNCHER)))
			return AISB_EXIT_FAILED;
	} else
		/* the first word naming a file of the project ("sh run-agent.sh", "./agent") is the
		 * launcher's script: frozen like validate.sh */
		for (size_t i = 0; a->launcher[i] && !a->lfile; i++) {
			const char *w = a->launcher[i];
			if (w[0] == '-' || w[0] == '/' || path_has_dotdot(w) ||
			    read_project_file(a, w, &a->ltext, &a->llen, NULL) < 0)
				continue;
			if (!(a->lfile = strdup(w)))
				return AISB_EXIT_FAILED;
		}
	return 0;
}

/* The validation gate, its content recorded for the between-units check; a->vproblem says
 * what is wrong with it for --status. Return: 0 or 78 (logged unless @quiet). */
static int find_gate(struct ap *a, bool quiet)
{
	mode_t mode = 0;
	int r = read_project_file(a, AUTOPHASE_VALIDATE, &a->vtext, &a->vlen, &mode);

	if (r == -ENOENT) {
		a->vproblem = "missing";
		return quiet ? AISB_EXIT_POLICY
			     : (log_error("autophase: no %s/%s: every phase is validated before it is delivered; write "
					  "one that exits 0 when the work is acceptable", a->top, AUTOPHASE_VALIDATE),
				AISB_EXIT_POLICY);
	}
	if (r < 0) {
		a->vproblem = file_error(r);
		return quiet ? AISB_EXIT_POLICY
			     : (log_error("autophase: '%s/%s': %s", a->top, AUTOPHASE_VALIDATE, file_error(r)),
				AISB_EXIT_POLICY);
	}
	if (!(mode & 0111)) {
		free(a->vtext);
		a->vtext = NULL;
		a->vproblem = "not executable (chmod +x it)";
		return quiet ? AISB_EXIT_POLICY
			     : (log_error("autophase: '%s/%s' is not executable (chmod +x it)", a->top, AUTOPHASE_VALIDATE),
				AISB_EXIT_POLICY);
	}
	return 0;
}

/* The identity of the driver's commits, with gitrun's precedence (gitrun_read_user()): the
 * caller's GIT_AUTHOR_NAME/EMAIL, else user.name and user.email of the repository's config,
 * ~/.gitconfig, then $XDG_CONFIG_HOME/git/config; and the user's excludes file (git status runs
 * without the global config). */
static int find_identity(struct ap *a)
{
	int r = gitrun_read_user(&a->g, a->commondir, GITRUN_IDENT | GITRUN_EXCLUDES);

	if (r == -ENODATA)
		return log_error("autophase: no git identity for the driver's commits: set user.name and user.email "
				 "(git config --global user.name NAME; includes are not followed) or export "
				 "GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL"),
		       AISB_EXIT_POLICY;
	if (r < 0)
		return log_error_errno(r, "autophase: cannot read the git identity from the config files: %m"), AISB_EXIT_POLICY;
	if (!(a->name = strdup(a->g.name)) || !(a->email = strdup(a->g.email)))
		return AISB_EXIT_FAILED;
	return 0;
}

/* A clean start: the first commit holds only what the first phase did. */
static int check_clean(struct ap *a)
{
	_cleanup_free_ char *out = NULL;

	if (git(a, &out, "status", "--porcelain=v1", "--untracked-files=all", "--ignore-submodules=none") != 0)
		return AISB_EXIT_FAILED;
	if (*out) {
		_cleanup_free_ char *first = strndup(out, strcspn(out, "\n"));
		return log_error("autophase: the work tree has changes ('%s'...): commit, stash or ignore them first, so "
				 "that each phase's commit holds only that phase's work", first ? first : ""),
		       AISB_EXIT_POLICY;
	}
	return 0;
}

static int take_snapshot(struct ap *a, struct gitguard_snapshot **s)
{
	int r = gitguard_snapshot_take(a->top, a->gitdir, a->commondir, a->o->home, s);
	if (r < 0)
		return log_error_errno(r, "autophase: cannot fingerprint the hooks and config of '%s': %m%s", a->gitdir,
				       r == -EFBIG ? " (a file over 1 MiB or over 4096 entries: refusing to vouch for "
						     "what could not be recorded)" : ""),
		       r == -EFBIG ? AISB_EXIT_POLICY : AISB_EXIT_FAILED;
	return 0;
}

/* Whether @s is a URL or scp-like address ("host:path") rather than a local path. Pure. */
static bool is_url(const char *s)
{
	const char *colon = strchr(s, ':');
	return colon && (strstr(s, "://") || !memchr(s, '/', (size_t)(colon - s)));
}

/* The push target, resolved once before the first unit: a remote's pushurl (else its url),
 * read raw from the repository's config as the user left it (the fingerprint then vouches for
 * it until the end), else --push's value itself; a local path made absolute against the top.
 * Read raw so that the user's global url.*.insteadOf applies when the push runs. The push
 * itself never reads the repository's config (push_tip()). Return: 0 or an exit code. */
static int resolve_push_url(struct ap *a)
{
	_cleanup_free_ char *key = NULL, *url = NULL;
	const char *remote = a->o->push_remote;

	if (!remote)
		return 0;
	if (asprintf(&key, "remote.%s.pushurl", remote) < 0)
		return AISB_EXIT_FAILED;
	if (git_quiet(a, &url, "config", "--get", key) != 0 || !*url) {
		free(url);
		url = NULL;
		free(key);
		if (asprintf(&key, "remote.%s.url", remote) < 0)
			return AISB_EXIT_FAILED;
		if (git_quiet(a, &url, "config", "--get", key) != 0 || !*url) {
			free(url);
			url = strdup(remote);
		}
	}
	if (!url)
		return AISB_EXIT_FAILED;
	if (!is_url(url) && !path_is_absolute(url)) {
		char *abs = path_join(a->top, url);
		if (!abs)
			return AISB_EXIT_FAILED;
		free(url);
		url = abs;
	}
	a->push_url = TAKE_PTR(url);
	return 0;
}

/* The push target for messages: the remote's name with its URL, or the URL; credentials hidden. */
static char *push_target(struct ap *a)
{
	_cleanup_free_ char *raw = NULL;
	const char *remote = a->o->push_remote, *branch = a->o->push_branch ? a->o->push_branch : a->branch;

	if (!a->push_url || streq(a->push_url, remote) ? asprintf(&raw, "%s branch %s", remote, branch) < 0
						       : asprintf(&raw, "%s (%s) branch %s", remote, a->push_url, branch) < 0)
		return NULL;
	return gitrun_redact(raw);
}

static const char *const source_words[AUTOPHASE_LAUNCHER_SOURCE_MAX] = {
	[AUTOPHASE_LAUNCHER_FLAG] = "--launcher",
	[AUTOPHASE_LAUNCHER_CONFIG] = "autophase_launcher in the config",
	[AUTOPHASE_LAUNCHER_FILE] = AUTOPHASE_LAUNCHER,
	[AUTOPHASE_LAUNCHER_HOST] = "the host launcher",
	[AUTOPHASE_LAUNCHER_NONE] = "none",
};

/* The launcher as reports show it: where it came from and its program, never its content nor
 * its arguments (either may hold a secret). */
static void print_launcher(const struct ap *a, FILE *f)
{
	size_t n = strv_length(a->launcher);
	_cleanup_free_ char *prog = n ? gitrun_redact(a->launcher[0]) : NULL;

	if (!n) {
		fprintf(f, "launcher:  none\n");
		return;
	}
	if (a->lsrc == AUTOPHASE_LAUNCHER_HOST) {
		/* named, never shown: a function's body is where the token is fetched */
		if (a->hl_rc)
			fprintf(f, "launcher:  %s, %s %s in %s, run on the host per unit (its body is never shown)\n",
				a->hl_name, a->hl_kind[0] == 'a' ? "an" : "a", a->hl_kind, a->hl_rc);
		else
			fprintf(f, "launcher:  %s, the program %s, run on the host per unit\n", a->hl_name, a->hl_prog);
		if (!a->hl_forwards)
			fprintf(f, "launcher:  %s DROPS ITS ARGUMENTS (never uses \"$@\"): refused by the preflight\n",
				a->hl_name);
		return;
	}
	fprintf(f, "launcher:  %s from %s", prog ? prog : "?", source_words[a->lsrc]);
	if (n > 1)
		fprintf(f, ", %zu argument%s not shown", n - 1, n > 2 ? "s" : "");
	fprintf(f, "%s\n", a->lfile ? " (its content is never shown)" : "");
}

/* The first phase not delivered yet, or NULL. */
static const char *first_pending(const struct ap *a)
{
	for (size_t i = 0; i < a->n; i++)
		if (!a->done[i])
			return a->phases[i];
	return NULL;
}

static void print_report(struct ap *a, bool plan)
{
	_cleanup_free_ char *target = a->o->push_remote ? push_target(a) : NULL;
	bool next_shown = false;

	printf("project:   %s\n", a->top);
	printf("branch:    %s at %.12s\n", a->branch, a->tip);
	print_launcher(a, stdout);
	if (a->vtext)
		printf("validate:  %s\n", AUTOPHASE_VALIDATE);
	else
		printf("validate:  %s: %s\n", AUTOPHASE_VALIDATE, a->vproblem ? a->vproblem : "not read");
	printf("push:      %s\n", target ? target : "no (commits stay local)");
	if (plan) {
		printf("identity:  %s <%s>\n", a->name, a->email);
		printf("git guard: %zu entries of .git fingerprinted%s\n", gitguard_snapshot_size(a->snap),
		       a->o->trust_git_changes ? " (changes trusted: --trust-git-changes)" : "");
		printf("preflight: %s\n", first_pending(a) ? "the first unit's 'aisb run --dry-run' accepts the plan"
							      : "nothing pending");
	}
	for (size_t i = 0; i < a->n; i++) {
		if (a->done[i]) {
			printf("phase %s: delivered in %.12s\n", a->phases[i], a->done[i]);
			continue;
		}
		printf("phase %s: %s", a->phases[i], next_shown ? "pending" : "next");
		if (plan && a->lsrc == AUTOPHASE_LAUNCHER_HOST) {
			_cleanup_free_ char *flags = NULL;
			size_t fl = 0;
			FILE *m = open_memstream(&flags, &fl);
			for (size_t k = 0; m && a->o->run_flags && a->o->run_flags[k]; k++) {
				_cleanup_free_ char *w = autophase_preview_word(k ? a->o->run_flags[k - 1] : NULL,
										a->o->run_flags[k]);
				fprintf(m, " %s", w ? w : "?");
			}
			if (m)
				fclose(m);
			printf(": %s%s --env AISB_PHASE=%s ... -p <prompt>; then %s%s%s%s; then a commit%s", a->hl_name,
			       flags ? flags : "", a->phases[i], a->o->validate_on_host ? "" : a->hl_name,
			       a->o->validate_on_host ? "" : flags ? flags : "", a->o->validate_on_host ? "" : " ... -- ",
			       a->o->validate_on_host ? AUTOPHASE_VALIDATE " on the host" : AUTOPHASE_VALIDATE,
			       a->o->push_remote ? " and a push" : "");
		} else if (plan) {
			printf(": aisb run");
			for (size_t k = 0; a->o->run_flags && a->o->run_flags[k]; k++) {
				_cleanup_free_ char *w = autophase_preview_word(k ? a->o->run_flags[k - 1] : NULL,
										a->o->run_flags[k]);
				printf(" %s", w ? w : "?");
			}
			if (autophase_is_harness(a->launcher[0]))
				printf(" --harness %s --harness-args <launcher arguments> %s/%s.md; then %s%s; then a commit%s",
				       a->launcher[0], AUTOPHASE_DIR, a->phases[i], AUTOPHASE_VALIDATE,
				       a->o->validate_on_host ? " on the host" : "", a->o->push_remote ? " and a push" : "");
			else
				printf(" -- <launcher> %s/%s.md; then %s%s; then a commit%s", AUTOPHASE_DIR, a->phases[i],
				       AUTOPHASE_VALIDATE, a->o->validate_on_host ? " on the host" : "",
				       a->o->push_remote ? " and a push" : "");
		}
		printf("\n");
		next_shown = true;
	}
	if (!a->n)
		printf("phases:    none in %s/ (files named NN-name.md)\n", AUTOPHASE_DIR);
	else if (!next_shown)
		printf("all %zu phases are delivered\n", a->n);
}

/* Runs one unit's sandbox: `aisb run RUN-FLAGS --env ... -- ARGV...`, or for a launcher whose
 * program is one of aisb's harnesses (@harness) `aisb run RUN-FLAGS --env ... --harness NAME
 * --harness-args ARGS...`, so that the harness's host config is bridged as in any run
 * (docs/agents.md; a `--` command bridges nothing). stdin @in_fd, stdout and stderr the
 * command's. Return: the run's exit status (128+N for signal N) or an exit code. Logs on failure
 * to start it. */
/* The git check's verdict of one unit's run (AISB_GUARD_VERDICT_FD, run/sandbox.c). */
struct unit_verdict {
	bool got;                 /* false: the check never ran (aisb was killed): pending */
	unsigned long found, unjudged, failed, incomplete;
};

static void parse_verdict(int fd, struct unit_verdict *v)
{
	char buf[256];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);

	if (n <= 0)
		return;
	buf[n] = 0;
	v->got = sscanf(buf, "found=%lu unjudged=%lu failed=%lu incomplete=%lu", &v->found, &v->unjudged, &v->failed,
			&v->incomplete) == 4;
}

enum {
	RUN_HARNESS = 1 << 0, /* the launcher's program is one of aisb's harnesses */
	RUN_DRY = 1 << 1,     /* the preflight: `aisb run --dry-run`, its plan to /dev/null */
};

static int run_sandbox(struct ap *a, const char *phase, char *const *cmd, int in_fd, unsigned flags,
		       struct unit_verdict *verdict)
{
	_cleanup_close_ int vr = -1, vw = -1;
	int vfds[2];
	_cleanup_strv_free_ char **argv = NULL;
	_cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
	int st = 0;
	pid_t pid;

	if (asprintf(&e1, "AISB_PHASE=%s", phase) < 0 ||
	    asprintf(&e2, "AISB_PHASE_FILE=%s/%s.md", AUTOPHASE_DIR, phase) < 0 ||
	    asprintf(&e3, "AISB_PHASE_ROUND=%u", a->round) < 0)
		return AISB_EXIT_FAILED;
	bool harness = flags & RUN_HARNESS, host = a->lsrc == AUTOPHASE_LAUNCHER_HOST, host_bash = host && a->hl_rc;

	/* a host launcher: the user's command, which runs aisb itself with "$@" (RUN-FLAGS, the
	 * phase's variables, then `-p PROMPT` for the agent or `-- validate.sh PHASE-FILE`) */
	if (host_bash ? strv_push(&argv, BASH) < 0 || strv_push(&argv, "--norc") < 0 || strv_push(&argv, "--noprofile") < 0 ||
				strv_push(&argv, "-i") < 0 || strv_push(&argv, "-c") < 0 ||
				strv_push(&argv, unit_script) < 0 || strv_push(&argv, "aisb-launcher") < 0 ||
				strv_push(&argv, a->hl_rc) < 0 || strv_push(&argv, a->hl_name) < 0
	    : host    ? strv_push(&argv, a->hl_prog) < 0
		      : strv_push(&argv, "aisb") < 0 || strv_push(&argv, "run") < 0)
		return AISB_EXIT_FAILED;
	if ((flags & RUN_DRY) && strv_push(&argv, "--dry-run") < 0)
		return AISB_EXIT_FAILED;
	for (size_t i = 0; a->o->run_flags && a->o->run_flags[i]; i++)
		if (strv_push(&argv, a->o->run_flags[i]) < 0)
			return AISB_EXIT_FAILED;
	if (strv_push(&argv, "--env") < 0 || strv_push(&argv, e1) < 0 || strv_push(&argv, "--env") < 0 ||
	    strv_push(&argv, e2) < 0 || strv_push(&argv, "--env") < 0 || strv_push(&argv, e3) < 0)
		return AISB_EXIT_FAILED;
	if (host && a->lib_args) {
		/* the library's pi: its arguments as they are */
		for (size_t i = 0; a->lib_args[i]; i++)
			if (strv_push(&argv, a->lib_args[i]) < 0)
				return AISB_EXIT_FAILED;
	} else if (host && a->prompt) {
		/* the prompt is one argument, never text of a command line */
		if (strv_push(&argv, "-p") < 0 || strv_push(&argv, a->prompt) < 0)
			return AISB_EXIT_FAILED;
	} else {
		if (harness ? strv_push(&argv, "--harness") < 0 || strv_push(&argv, cmd[0]) < 0 ||
				      strv_push(&argv, "--harness-args") < 0
			    : strv_push(&argv, "--") < 0)
			return AISB_EXIT_FAILED;
		for (size_t i = harness ? 1 : 0; cmd[i]; i++)
			if (strv_push(&argv, cmd[i]) < 0)
				return AISB_EXIT_FAILED;
	}
	/* the verdict pipe: read after the unit ended, whatever still holds its write end */
	if (pipe2(vfds, O_CLOEXEC | O_NONBLOCK) < 0)
		return log_error_errno(-errno, "autophase: cannot make a pipe: %m"), AISB_EXIT_FAILED;
	vr = vfds[0];
	vw = vfds[1];
	fflush(NULL);
	/* like system(3): ^C reaches the unit (same process group), and the driver, which must not
	 * die half-way, sees its exit status instead */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	{
		/* fd 3, without O_CLOEXEC, named to aisb by AISB_GUARD_VERDICT_FD (cli/resolve.c); with
		 * bash -i: stderr starts on /dev/null (unit_script restores it from fd 4) */
		int out = a->capture_fd >= 0 ? a->capture_fd : (flags & RUN_DRY) ? SPAWN_DEVNULL : 1;
		int err = a->capture_fd >= 0 ? a->capture_fd : 2;
		struct spawn_fd fds[5] = { { in_fd, 0 }, { out, 1 }, { vw, 3 } };
		size_t n = 3;
		char *const verdict_env[] = { (char *)"AISB_GUARD_VERDICT_FD=3", NULL };
		int r;

		if (host_bash) {
			fds[n++] = (struct spawn_fd){ err, 4 };
			fds[n++] = (struct spawn_fd){ SPAWN_DEVNULL, 2 };
		} else
			fds[n++] = (struct spawn_fd){ err, 2 };
		r = spawn(&(struct spawn_opts){ .path = host ? argv[0] : a->o->self, .argv = argv, .fds = fds, .n_fds = n,
						.cwd = a->top, .sig_default = SPAWN_SIG(SIGINT) | SPAWN_SIG(SIGQUIT),
						.env_set = verdict_env },
			  &pid);
		if (r < 0) {
			sigaction(SIGINT, &old_int, NULL);
			sigaction(SIGQUIT, &old_quit, NULL);
			*verdict = (struct unit_verdict){ 0 }; /* the check never ran */
			return start_failed(r, "a unit");
		}
	}
	/* only the unit holds the write end now: EOF once it and its helpers are gone */
	close(TAKE_FD(vw));
	st = spawn_wait(pid);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	*verdict = (struct unit_verdict){ 0 };
	parse_verdict(vr, verdict);
	return st;
}

/* One driver per repository: a flock on <state>/autophase/<dev>-<ino of the common dir>.lock,
 * outside the project (a sandbox cannot reach it), held until the process exits. Return: the
 * lock fd, or an exit code < 0 negated (-78 another driver runs). Logs on failure. */
static int take_lock(struct ap *a)
{
	_cleanup_free_ char *dir = NULL, *path = NULL;
	struct stat st;
	int fd;

	if (!a->o->state_dir)
		return log_error("autophase: no state dir for the driver's lock (set HOME or XDG_STATE_HOME)"),
		       -AISB_EXIT_FAILED;
	if (stat(a->commondir, &st) < 0 || !(dir = path_join(a->o->state_dir, "autophase")) ||
	    asprintf(&path, "%s/%llx-%llx.lock", dir, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino) < 0)
		return -AISB_EXIT_FAILED;
	if (mkdir_p(dir, 0700) < 0)
		return log_error_errno(-errno, "autophase: cannot create '%s': %m", dir), -AISB_EXIT_FAILED;
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return log_error_errno(-errno, "autophase: cannot open the lock '%s': %m", path), -AISB_EXIT_FAILED;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int r = -errno;
		close(fd);
		if (r == -EWOULDBLOCK)
			return log_error("autophase: another 'aisb autophase' is running in '%s' (lock '%s'); one driver "
					 "per repository at a time", a->top, path),
			       -AISB_EXIT_POLICY;
		return log_error_errno(r, "autophase: cannot lock '%s': %m", path), -AISB_EXIT_FAILED;
	}
	return fd;
}

/* The session directories gitguard moved planted git files into (<state>/quarantine/<session>,
 * created only when it found something). */
static char **quarantines(const struct ap *a)
{
	_cleanup_free_ char *dir = a->o->state_dir ? path_join(a->o->state_dir, "quarantine") : NULL;
	char **v = NULL;
	struct dirent *de;
	DIR *d = dir ? opendir(dir) : NULL;

	if (!d)
		return NULL;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strv_push(&v, de->d_name) < 0)
			break;
	closedir(d);
	return v;
}

/* A memfd holding @text, at offset 0: a unit's stdin (a plain file to the agent). */
static int text_fd(const char *text)
{
	int fd = memfd_create("aisb-autophase-prompt", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write_full(fd, text, strlen(text)) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* A check that never ran, or could not judge everything, vouches for nothing: no delivery,
 * --trust-git-changes or not (issue 21). Return: 0 or 78 (logged). */
static int check_verdict(const char *phase, const char *who, const struct unit_verdict *v)
{
	if (!v->got)
		return log_error("phase %s: refusing to deliver: the check for planted git files of the %s's run "
				 "never reported (aisb was cut short, or the launcher did not run aisb); the phase's work "
				 "stays in the work tree. The next aisb command runs the pending check; inspect its "
				 "findings before you rerun", phase, who),
		       AISB_EXIT_POLICY;
	if (v->incomplete || v->unjudged || v->failed)
		return log_error("phase %s: refusing to deliver: the check for planted git files of the %s's run "
				 "could not vouch for everything (%lu director%s not checked, %lu file%s not moved; "
				 "named above); the phase's work stays in the work tree. Make them checkable and rerun",
				 phase, who, v->unjudged, v->unjudged == 1 ? "y" : "ies", v->failed,
				 v->failed == 1 ? "" : "s"),
		       AISB_EXIT_POLICY;
	return 0;
}

/* The agent of one round, retried when it fails (a provider error, a crash) up to o->retries
 * times, waiting o->backoff seconds, doubled each time. Return: 0 or an exit code. Logs. */
static int run_agent(struct ap *a, const char *phase, char *const *cmd, const char *prompt)
{
	unsigned delay = a->o->backoff;

	for (unsigned try = 0;; try++) {
		struct unit_verdict v = { 0 };
		/* a host launcher gets the prompt as its last argument, stdin /dev/null; one inside
		 * the sandbox on stdin */
		_cleanup_close_ int fd = a->lsrc == AUTOPHASE_LAUNCHER_HOST ? open("/dev/null", O_RDONLY | O_CLOEXEC)
									    : text_fd(prompt);
		int st, r;

		if (fd < 0)
			return log_error_errno(fd, "autophase: cannot hold the prompt: %m"), AISB_EXIT_FAILED;
		a->prompt = prompt;
		st = run_sandbox(a, phase, cmd, fd, autophase_is_harness(cmd[0]) ? RUN_HARNESS : 0, &v);
		a->prompt = NULL;
		if (st >= 128 || st == AISB_EXIT_POLICY || st == AISB_EXIT_ENFORCE || st == AISB_EXIT_FAILED)
			return log_error("phase %s: the agent's run exited %d; nothing of it is delivered", phase, st), st;
		r = check_verdict(phase, "agent", &v);
		if (r != 0)
			return r;
		if (st == 0)
			return 0;
		if (try >= a->o->retries)
			return log_error("phase %s: the agent exited %d%s; nothing of it is delivered (its changes stay in "
					 "the work tree for you to inspect)", phase, st, try ? " on its last retry" : ""),
			       1;
		log_warn("phase %s: the agent exited %d; retry %u of %u in %u s", phase, st, try + 1, a->o->retries, delay);
		if (delay)
			sleep(delay);
		delay = delay > 3600 ? delay : delay * 2;
	}
}

/* validate.sh as it was before the first unit? (the gate must not be edited by what it gates;
 * under --validate-in host this is checked before every run of it, not only before delivery) */
static bool gate_unchanged(const struct ap *a)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;

	return read_project_file(a, AUTOPHASE_VALIDATE, &text, &len, NULL) == 0 && len == a->vlen &&
	       memcmp(text, a->vtext, len) == 0;
}

/* --validate-in host: validate.sh PHASE-FILE on this machine, as the caller, in the top of the
 * work tree, with the driver's environment and AISB_PHASE*, stdin /dev/null, stdout and stderr
 * to a->capture_fd. Refused (78) when the gate changed since the first unit: an edited gate is
 * never run outside the sandbox. Return: its exit status, 128+N, or an exit code. Logs. */
static int run_gate_on_host(struct ap *a, const char *phase, char *const *vcmd)
{
	_cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL;
	pid_t pid;

	if (!gate_unchanged(a))
		return log_error("phase %s: refusing to run %s on the host: it changed during the pipeline (the gate "
				 "must not be edited by what it gates); restore it (git checkout -- %s) and rerun", phase,
				 AUTOPHASE_VALIDATE, AUTOPHASE_VALIDATE),
		       AISB_EXIT_POLICY;
	if (asprintf(&e1, "AISB_PHASE=%s", phase) < 0 ||
	    asprintf(&e2, "AISB_PHASE_FILE=%s/%s.md", AUTOPHASE_DIR, phase) < 0 ||
	    asprintf(&e3, "AISB_PHASE_ROUND=%u", a->round) < 0)
		return AISB_EXIT_FAILED;
	fflush(NULL);
	{
		char *const env[] = { e1, e2, e3, NULL };
		const struct spawn_fd fds[] = { { SPAWN_DEVNULL, 0 }, { a->capture_fd, 1 }, { a->capture_fd, 2 } };
		int r = spawn(&(struct spawn_opts){ .argv = vcmd, .fds = fds, .n_fds = ELEMENTSOF(fds), .cwd = a->top,
						    .env_set = env },
			      &pid);

		if (r < 0)
			return start_failed(r, AUTOPHASE_VALIDATE);
	}
	return spawn_wait(pid);
}

/* The gate of one round in its own sandbox, its output (stdout and stderr) captured, shown on
 * the driver's stderr and its tail kept in @tail for a fix prompt. Return: validate.sh's exit
 * status (0 passes), or an exit code of aisb's own (>= 77). Logs. */
static int run_gate(struct ap *a, const char *phase, char *const *vcmd, char *tail, size_t *tail_len)
{
	_cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = memfd_create("aisb-autophase-validate", MFD_CLOEXEC);
	struct unit_verdict v = { 0 };
	char buf[4096];
	ssize_t n;
	int st, r;

	_Static_assert(sizeof(buf) <= AUTOPHASE_MAX_FEEDBACK, "one read fits the tail");
	*tail_len = 0;
	if (devnull < 0 || out < 0)
		return AISB_EXIT_FAILED;
	a->capture_fd = out;
	st = a->o->validate_on_host ? run_gate_on_host(a, phase, vcmd) : run_sandbox(a, phase, vcmd, devnull, 0, &v);
	a->capture_fd = -1;
	if (lseek(out, 0, SEEK_SET) == 0)
		while ((n = read(out, buf, sizeof(buf))) > 0) {
			(void)write_full(2, buf, (size_t)n);
			if (*tail_len + (size_t)n > AUTOPHASE_MAX_FEEDBACK) {
				size_t drop = *tail_len + (size_t)n - AUTOPHASE_MAX_FEEDBACK;
				memmove(tail, tail + drop, *tail_len - drop);
				*tail_len -= drop;
			}
			memcpy(tail + *tail_len, buf, (size_t)n);
			*tail_len += (size_t)n;
		}
	if (st >= 128 || st == AISB_EXIT_POLICY || st == AISB_EXIT_ENFORCE || st == AISB_EXIT_FAILED)
		return log_error("phase %s: the run of %s exited %d; nothing of it is delivered", phase, AUTOPHASE_VALIDATE,
				 st),
		       st;
	if (a->o->validate_on_host)
		return st; /* no sandbox, no git check: the user chose it, warned (warn_host_gate()) */
	r = check_verdict(phase, AUTOPHASE_VALIDATE, &v);
	return r ? -r : st;
}

/* A quarantine that is not in @seen: what a unit's gitguard moved away was planted for git.
 * One delivered anyway (trust_git_changes) is added to @seen. Return: 0 or 78 (logged). */
static int check_quarantines(struct ap *a, const char *phase, char ***seen)
{
	_cleanup_strv_free_ char **after = quarantines(a);

	for (size_t i = 0; after && after[i]; i++) {
		if (strv_contains(*seen, after[i]) || strncmp(after[i], "autophase-", 10) == 0)
			continue;
		if (!a->o->trust_git_changes)
			return log_error("phase %s: refusing to deliver: a unit planted files for git, moved to '%s/quarantine/%s' "
					 "(named above); the phase's work stays in the work tree. Inspect it; rerun with "
					 "--trust-git-changes to deliver such work anyway", phase, a->o->state_dir, after[i]),
			       AISB_EXIT_POLICY;
		log_warn("phase %s: a unit planted files for git (moved to '%s/quarantine/%s'); delivering anyway "
			 "(--trust-git-changes)", phase, a->o->state_dir, after[i]);
		if (strv_push(seen, after[i]) < 0)
			return AISB_EXIT_FAILED;
	}
	return 0;
}

/* Step 3: the agent, then the gate, each in its own sandbox; when the gate fails, up to
 * o->fix_rounds rounds of the agent with the fix prompt and the gate again; then gitguard's
 * verdict on the unit's runs (a new quarantine refuses, unless trust_git_changes). @text: the
 * phase file as it was before the unit. Return: 0 or an exit code. Logs. */
static int run_unit(struct ap *a, const char *phase, const char *text, size_t len)
{
	_cleanup_free_ char *rel = NULL, *tail = malloc(AUTOPHASE_MAX_FEEDBACK);
	_cleanup_strv_free_ char **cmd = strv_copy(a->launcher), **vcmd = NULL, **before = NULL;
	size_t tail_len = 0;
	int st = 0;

	if (!cmd || !tail || asprintf(&rel, "%s/%s.md", AUTOPHASE_DIR, phase) < 0 || strv_push(&cmd, rel) < 0 ||
	    strv_push(&vcmd, AUTOPHASE_VALIDATE) < 0 || strv_push(&vcmd, rel) < 0)
		return AISB_EXIT_FAILED;
	before = quarantines(a);
	for (unsigned round = 0;; round++) {
		_cleanup_free_ char *prompt = autophase_prompt(phase, rel, text, len, round, a->o->fix_rounds, st, tail,
							       tail_len);
		int r;

		if (!prompt)
			return AISB_EXIT_FAILED;
		a->round = round;
		if (round)
			log_info("phase %s: fix round %u of %u: agent (%s) in a sandbox", phase, round, a->o->fix_rounds,
				 source_words[a->lsrc]);
		else
			log_info("phase %s: agent (%s) in a sandbox", phase, source_words[a->lsrc]);
		r = run_agent(a, phase, cmd, prompt);
		if (r != 0)
			return r;
		log_info("phase %s: %s %s", phase, AUTOPHASE_VALIDATE,
			 a->o->validate_on_host ? "on the host (--validate-in host)" : "in a sandbox");
		st = run_gate(a, phase, vcmd, tail, &tail_len);
		if (st < 0)
			return -st;
		if (st == 0)
			break;
		if (st >= 128 || st == AISB_EXIT_POLICY || st == AISB_EXIT_ENFORCE || st == AISB_EXIT_FAILED)
			return st;
		if (round >= a->o->fix_rounds) {
			log_error("phase %s: %s exited %d%s; nothing of it is delivered (its changes stay in the work tree for "
				  "you to inspect)", phase, AUTOPHASE_VALIDATE, st,
				  a->o->fix_rounds ? " after the last fix round" : "");
			return 1;
		}
		log_warn("phase %s: %s exited %d; fix round %u of %u follows", phase, AUTOPHASE_VALIDATE, st, round + 1,
			 a->o->fix_rounds);
	}
	/* gitguard's verdict on the unit's runs: what it moved away was planted for git */
	return check_quarantines(a, phase, &before);
}

/* Step 4, the guards before a delivery: .git's entry points as before the first unit, the gate
 * and the launcher unchanged, HEAD on the branch. Return: 0 or 78. Logs on failure. */
static int check_guards(struct ap *a, const char *phase)
{
	struct gitguard_snapshot *now = NULL;
	_cleanup_free_ char *what = NULL, *head = NULL, *text = NULL;
	size_t len = 0;
	int r;

	r = take_snapshot(a, &now);
	if (r != 0)
		return r;
	r = gitguard_snapshot_diff(a->snap, now, &what);
	gitguard_snapshot_free(now);
	if (r < 0)
		return AISB_EXIT_FAILED;
	if (r > 0 && !a->o->trust_git_changes)
		return log_error("phase %s: refusing to deliver: %s since the pipeline started (the hooks and config "
				 "of .git are fingerprinted before the first unit); the phase's work stays in the work "
				 "tree. Inspect the change; if you made it, rerun with --trust-git-changes", phase, what),
		       AISB_EXIT_POLICY;
	if (r > 0)
		log_warn("phase %s: %s since the pipeline started; delivering anyway (--trust-git-changes)", phase, what);
	if (!gate_unchanged(a))
		return log_error("phase %s: refusing to deliver: %s changed during the pipeline (the gate must not be "
				 "edited by what it gates); restore it (git checkout -- %s) and rerun", phase,
				 AUTOPHASE_VALIDATE, AUTOPHASE_VALIDATE),
		       AISB_EXIT_POLICY;
	if (a->lfile) {
		r = read_project_file(a, a->lfile, &text, &len, NULL);
		if (r < 0 || len != a->llen || memcmp(text, a->ltext, len) != 0)
			return log_error("phase %s: refusing to deliver: the launcher '%s' changed during the pipeline; "
					 "restore it and rerun", phase, a->lfile),
			       AISB_EXIT_POLICY;
	}
	if (git_quiet(a, &head, "symbolic-ref", "-q", "HEAD") != 0 || !streq(head, a->ref))
		return log_error("phase %s: refusing to deliver: HEAD no longer names %s (it was switched during the "
				 "phase); check out '%s' again and rerun", phase, a->ref, a->branch),
		       AISB_EXIT_POLICY;
	return 0;
}

/* The phase file now (before its unit: the agent can edit it), bounded; empty when it cannot
 * be read (the unit's run says why). Return: 0 or -ENOMEM. */
static int read_phase(const struct ap *a, const char *phase, char **text, size_t *len)
{
	_cleanup_free_ char *rel = NULL;

	*text = NULL;
	*len = 0;
	if (asprintf(&rel, "%s/%s.md", AUTOPHASE_DIR, phase) < 0)
		return -ENOMEM;
	if (read_project_file(a, rel, text, len, NULL) < 0) {
		*len = 0;
		if (!(*text = strdup("")))
			return -ENOMEM;
	}
	return 0;
}

/* Step 5: the work tree as one commit on top of the last delivered one, made with a private
 * index (the repository's index is sandbox-writable), the host identity and no hook; published
 * with compare-and-swap. @subject: from the phase file as it was before the unit (the agent can
 * edit it). Return: 0 or an exit code. Logs. */
static int commit_phase(struct ap *a, const char *phase, const char *subject)
{
	_cleanup_free_ char *index = path_join(a->gitdir, "aisb-autophase.index"), *now = NULL, *tree = NULL;
	_cleanup_free_ char *commit = NULL, *trailer = NULL;
	_cleanup_free_ char *real_index = path_join(a->gitdir, "index");
	int r;

	if (!index || !real_index || asprintf(&trailer, AUTOPHASE_TRAILER ": %s", phase) < 0)
		return AISB_EXIT_FAILED;
	if (git_quiet(a, &now, "rev-parse", "-q", "--verify", a->ref) != 0)
		return log_error("phase %s: branch '%s' is gone; nothing delivered", phase, a->branch), AISB_EXIT_POLICY;
	if (!streq(now, a->tip) && a->o->library)
		/* the library's own commits: their work is delivered, as the driver's commit */
		log_info("phase %s: the library committed on '%s' (%.12s -> %.12s); the driver commits the work tree "
			 "on %.12s instead (private index, your identity, trailer), the library's commits stay only in "
			 "the reflog", phase, a->branch, a->tip, now, a->tip);
	else if (!streq(now, a->tip))
		/* the agent committed inside: its commit objects are not published, the work tree is */
		log_warn("phase %s: '%s' moved during the phase (%.12s -> %.12s: a commit made inside the sandbox); the "
			 "driver commits the work tree on %.12s instead, the sandbox's commits stay only in the reflog",
			 phase, a->branch, a->tip, now, a->tip);
	if (unlink(index) < 0 && errno != ENOENT)
		return log_error_errno(-errno, "autophase: cannot remove '%s': %m", index), AISB_EXIT_FAILED;
	a->index_file = index;
	r = git(a, NULL, "read-tree", a->tip);
	if (r == 0)
		r = git(a, NULL, "add", "--all", "--", ".");
	if (r == 0)
		r = git(a, &tree, "write-tree");
	if (r == 0)
		r = git(a, &commit, "commit-tree", "--no-gpg-sign", tree, "-p", a->tip, "-m", subject, "-m", trailer);
	a->index_file = NULL;
	if (r == 0)
		r = git(a, NULL, "update-ref", "-m", subject, a->ref, commit, now);
	if (r != 0) {
		(void)unlink(index);
		return log_error("phase %s: the commit failed; nothing delivered", phase), 1;
	}
	/* the repository's index becomes the one the commit was made from: the old one was the
	 * sandbox's to write and is not read */
	if (rename(index, real_index) < 0)
		log_warn_errno(-errno, "phase %s: cannot replace the index '%s': %m (run 'git reset' to refresh it)",
			       phase, real_index);
	free(a->tip);
	a->tip = TAKE_PTR(commit);
	log_info("phase %s: delivered as %.12s", phase, a->tip);
	return 0;
}

/* A shallow project (git clone --depth N): its .git/shallow, the commits whose parents it does
 * not have, goes to the push repository too, or git there walks into the missing parents and
 * the push fails. It is data (commit ids, checked one per line), never run. Return: 0, or 1
 * (logged). */
static int copy_shallow(struct ap *a, const char *dir, const char *what)
{
	_cleanup_free_ char *src = path_join(a->commondir, "shallow"), *dst = path_join(dir, "shallow"), *text = NULL;
	size_t len = 0;
	int r;

	if (!src || !dst)
		return 1;
	r = read_regular_at(AT_FDCWD, src, 1 << 20, &text, &len, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return log_error_errno(r, "%s: the repository is shallow and its '%s' cannot be read (%m): not pushed", what,
				       src),
		       1;
	for (char *l = text, *nl; l && *l; l = nl ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		if (nl)
			*nl = 0;
		if (!gitrun_is_oid(l))
			return log_error("%s: the repository is shallow and '%s' is not a list of commit ids (one per line): "
					 "not pushed; make it whole (git fetch --unshallow) or repair it", what, src),
			       1;
		if (nl)
			*nl = '\n';
	}
	if (write_file_at(AT_FDCWD, dst, text, len, 0600) < 0)
		return log_error_errno(-errno, "%s: cannot write '%s': %m", what, dst), 1;
	return 0;
}

/* Step 6: the delivered commit to the push target; no force, no hook; the user's global git
 * config (url.*.insteadOf, credential helpers) but never the project's: git runs in a bare
 * repository made for the push outside the project, whose only link to the project is an
 * alternates entry naming its object store (objects are data: nothing in them runs), so no
 * config, hook or attribute the sandbox could write is read. @what names the push point.
 * Return: 0, or 1 when the push failed (logged). */
static int push_tip(struct ap *a, const char *what)
{
	_cleanup_free_ char *spec = NULL, *target = push_target(a), *dir = NULL, *alt = NULL, *line = NULL;
	_cleanup_free_ char *objects = path_join(a->commondir, "objects");
	_cleanup_free_ char *dir_of_push = path_join(a->o->state_dir, "autophase");
	int r;

	if (a->pushed && streq(a->pushed, a->tip))
		return 0;
	if (!dir_of_push)
		return AISB_EXIT_FAILED;
	if (!objects || asprintf(&spec, "%s:refs/heads/%s", a->tip, a->o->push_branch ? a->o->push_branch : a->branch) < 0 ||
	    asprintf(&dir, "%s/autophase/push.XXXXXX", a->o->state_dir) < 0 || asprintf(&line, "%s\n", objects) < 0)
		return AISB_EXIT_FAILED;
	log_info("%s: pushing %.12s to %s", what, a->tip, target ? target : "?");
	if (mkdir_p(dir_of_push, 0700) < 0)
		return log_error_errno(-errno, "%s: cannot create '%s': %m", what, dir_of_push), 1;
	free(a->tried);
	a->tried = strdup(a->tip);
	if (!mkdtemp(dir))
		return log_error_errno(-errno, "%s: cannot make the push repository '%s': %m", what, dir), 1;
	/* git --git-dir=DIR init: nothing of the project is read, not even by discovery */
	a->g.bare = dir;
	r = git(a, NULL, "init", "--bare", "-q");
	a->g.bare = NULL;
	if (r == 0 && (!(alt = path_join(dir, "objects/info/alternates")) ||
		       write_file_at(AT_FDCWD, alt, line, strlen(line), 0600) < 0))
		r = (log_error_errno(-EIO, "%s: cannot write '%s': %m", what, alt ? alt : dir), 1);
	if (r == 0)
		r = copy_shallow(a, dir, what);
	if (r == 0) {
		a->g.bare = dir;
		r = git_remote(a, NULL, "push", "--porcelain", "--", a->push_url, spec);
		a->g.bare = NULL;
	}
	(void)rm_rf(dir);
	if (r != 0)
		return log_error("%s: the push failed; the commit %.12s is delivered locally (it is pushed again before "
				 "the next phase, at the end, and by the next run)", what, a->tip), 1;
	free(a->pushed);
	a->pushed = strdup(a->tip);
	return 0;
}

/* Whether the branch holds any delivered phase (what an earlier run may not have pushed). */
static bool any_delivered(const struct ap *a)
{
	for (size_t i = 0; a->done && i < a->n; i++)
		if (a->done[i])
			return true;
	return false;
}

static int next_phase(struct ap *a, size_t *idx)
{
	_cleanup_strv_free_ char **v = NULL;
	int r = list_phases(a, &v, NULL);

	if (r != 0)
		return r;
	/* phases may have been added by the one before (re-read each time); the delivered set is
	 * the history's */
	done_free(a);
	strv_free(a->phases);
	a->phases = TAKE_PTR(v);
	a->n = strv_length(a->phases);
	r = scan_delivered(a);
	if (r != 0)
		return r;
	for (*idx = 0; *idx < a->n && a->done[*idx]; (*idx)++)
		;
	return 0;
}

/* The preflight, before the first unit and in --dry-run: the first pending unit's `aisb run`
 * with --dry-run (which resolves and checks the whole plan and starts nothing), so a plan that
 * would fail 78 at the first unit fails here, named, before anything ran. @phase NULL: nothing
 * pending, nothing to check. Return: 0 or the run's exit code (logged). */
static int preflight(struct ap *a, const char *phase)
{
	_cleanup_strv_free_ char **cmd = strv_copy(a->launcher);
	_cleanup_free_ char *rel = NULL;
	_cleanup_close_ int devnull = -1;
	struct unit_verdict v = { 0 };
	int st;

	if (a->lsrc == AUTOPHASE_LAUNCHER_HOST)
		/* never called before the first unit (it may fetch a token): its definition is checked */
		return check_host_launcher(a);
	if (!phase)
		return 0;
	if (!cmd || asprintf(&rel, "%s/%s.md", AUTOPHASE_DIR, phase) < 0 || strv_push(&cmd, rel) < 0 ||
	    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return AISB_EXIT_FAILED;
	st = run_sandbox(a, phase, cmd, devnull, RUN_DRY | (autophase_is_harness(cmd[0]) ? RUN_HARNESS : 0), &v);
	if (st != 0)
		return log_error("autophase: preflight: the units' 'aisb run' refuses this plan (exit %d, the reason "
				 "above); no unit was started", st),
		       st == AISB_EXIT_POLICY || st == AISB_EXIT_ENFORCE || st >= 128 ? st : AISB_EXIT_POLICY;
	return 0;
}

/* --validate-in host is said on every run, dry run and status included. */
static void warn_host_gate(const struct ap *a)
{
	if (a->o->validate_on_host)
		log_warn("autophase: --validate-in host: %s runs on this machine, outside any sandbox, as you, with your "
			 "environment; it is checked unchanged since the first unit before each run, but what it calls "
			 "(a Makefile, the tests, the build) is the agent's to edit and runs on the host too",
			 AUTOPHASE_VALIDATE);
}

/* --library LIB: the seed's pipeline library run under aisb. The library keeps scheduling,
 * retries, backoff, report recovery and notifications; aisb shadows the five functions the seed
 * shadows, after a `declare -F` check that the library provides them and its entry point (a
 * library that changed shape is refused, never half-wired), and makes them read-only so the
 * library cannot define them again:
 *   pi              the agent: the driver's launcher (the same resolution as without a library:
 *                   --pi-cmd, AISB_AP_PI_CMD, --launcher, the config, .agents/launcher, sandbox-pi)
 *                   with the library's arguments, then the driver's checks
 *   first_prompt    the library's, then what the agent cannot do in the sandbox
 *   fix_prompt      the same
 *   run_validation  .agents/validate.sh as the driver runs it (--validate-in), then the checks
 *   push_phase      the driver's delivery: guards, its own commit of the work tree, the push
 * Each of the three is a request to the driver (this process), which runs it and answers with
 * its status, so no unit runs and no commit is delivered without the driver's guards. A unit the
 * guards refuse ends the library at once (SIGKILL while it waits for the answer): the library's
 * own git never runs after it. The library's own git runs with the seed's git environment (no
 * hooks, no fsmonitor, no system config, no ext::, no pager) and no transport at all: only
 * push_phase pushes. $1 the library. */
#define LIB_REQ_FD "62"
#define LIB_REP_FD "63"
#define LIB_MAX_WORDS 4096
#define LIB_MAX_REQUEST (1U << 20)
static const char library_script[] =
	"lib=$1; set --\n"
	". \"$lib\" || { echo \"aisb: autophase: the library '$lib' failed to load\" >&2; exit 78; }\n"
	"missing=\n"
	"for f in pi first_prompt fix_prompt run_validation push_phase run_pipeline; do\n"
	"\tdeclare -F \"$f\" >/dev/null || missing=\"$missing $f\"\n"
	"done\n"
	"if [ -n \"$missing\" ]; then\n"
	"\techo \"aisb: autophase: the library '$lib' does not have the contract's functions (missing:$missing); "
	"refusing to run it half-wired\" >&2\n"
	"\texit 78\n"
	"fi\n"
	"eval \"aisb_lib_first_prompt() $(declare -f first_prompt | tail -n +2)\"\n"
	"eval \"aisb_lib_fix_prompt() $(declare -f fix_prompt | tail -n +2)\"\n"
	"aisb_note='You are running inside an aisb sandbox: only this project is writable, the network reaches "
	"only the allowed hosts, you cannot push (the pipeline commits and pushes after .agents/validate.sh "
	"passes); do not commit, do not edit .agents/validate.sh, do not change .git.'\n"
	"first_prompt() { aisb_lib_first_prompt \"$@\"; printf '\\n---\\n%s\\n' \"$aisb_note\"; }\n"
	"fix_prompt() { aisb_lib_fix_prompt \"$@\"; printf '\\n---\\n%s\\n' \"$aisb_note\"; }\n"
	"aisb_call() {\n"
	"\tprintf '%s\\0' \"$#\" \"$@\" >&" LIB_REQ_FD " || exit 125\n"
	"\tlocal aisb_st\n"
	"\tIFS= read -r aisb_st <&" LIB_REP_FD " || exit 125\n"
	"\treturn \"$aisb_st\"\n"
	"}\n"
	"pi() { aisb_call pi \"$@\"; }\n"
	"run_validation() { aisb_call validate \"$@\"; }\n"
	"push_phase() { aisb_call deliver; }\n"
	"readonly -f aisb_call pi first_prompt fix_prompt run_validation push_phase aisb_lib_first_prompt "
	"aisb_lib_fix_prompt\n"
	"run_pipeline\n";

/* The seed's git environment for the library's own git (its scoped commit): GIT_CONFIG_COUNT
 * entries, so they win over every config file; protocol.allow=never: it cannot fetch or push
 * (push_phase is the driver's). */
static const char *const library_git_env[][2] = {
	{ "GIT_CONFIG_NOSYSTEM", "1" }, { "GIT_PAGER", "cat" }, { "GIT_CONFIG_COUNT", "4" },
	{ "GIT_CONFIG_KEY_0", "core.hooksPath" }, { "GIT_CONFIG_VALUE_0", "/dev/null" },
	{ "GIT_CONFIG_KEY_1", "protocol.ext.allow" }, { "GIT_CONFIG_VALUE_1", "never" },
	{ "GIT_CONFIG_KEY_2", "core.fsmonitor" }, { "GIT_CONFIG_VALUE_2", "false" },
	{ "GIT_CONFIG_KEY_3", "protocol.allow" }, { "GIT_CONFIG_VALUE_3", "never" },
};

/* One request of the library's shell: "COUNT\0WORD\0..." (lib_call()). Return: 1 (@v set), 0 at
 * the end of the stream, -EBADMSG for anything else. */
static int lib_read_request(FILE *f, char ***v)
{
	_cleanup_free_ char *w = NULL;
	size_t cap = 0, total = 0;
	unsigned long count;
	char *end;
	ssize_t n = getdelim(&w, &cap, 0, f);

	*v = NULL;
	if (n < 0)
		return feof(f) ? 0 : -EBADMSG;
	errno = 0;
	count = strtoul(w, &end, 10);
	if (errno || end == w || *end || count == 0 || count > LIB_MAX_WORDS)
		return -EBADMSG;
	for (unsigned long i = 0; i < count; i++) {
		n = getdelim(&w, &cap, 0, f);
		total += n > 0 ? (size_t)n : 0;
		if (n <= 0 || total > LIB_MAX_REQUEST || strv_push(v, w) < 0) {
			strv_free(*v);
			*v = NULL;
			return -EBADMSG;
		}
	}
	return 1;
}

/* The phase the library works on: the one it last validated (its PHASE-FILE), else the first
 * one not delivered on the branch. */
static const char *lib_phase(const struct ap *a)
{
	const char *p = a->lib_phase ? a->lib_phase : first_pending(a);
	return p ? p : "library";
}

/* After each of the library's units, before it gets an answer: the unit's git check, what
 * gitguard quarantined since the library started, the guards of a delivery. Return: 0 or 78. */
static int lib_after_unit(struct ap *a, const char *phase, const char *who, const struct unit_verdict *v)
{
	int r = v ? check_verdict(phase, who, v) : 0;

	if (r == 0)
		r = check_quarantines(a, phase, &a->lib_before);
	if (r == 0)
		r = check_guards(a, phase);
	return r;
}

/* pi ARGS: the driver's launcher with the library's arguments (a host launcher gets them after
 * the run flags and the phase's variables, one in the sandbox after its words), stdin
 * /dev/null. Return: its exit status, or an exit code < 0 negated (a refusal). */
static int lib_agent(struct ap *a, char **args)
{
	const char *phase = lib_phase(a);
	_cleanup_strv_free_ char **cmd = strv_copy(a->launcher);
	_cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct unit_verdict v = { 0 };
	int st, r;

	if (!cmd || devnull < 0)
		return -AISB_EXIT_FAILED;
	for (size_t i = 1; a->lsrc != AUTOPHASE_LAUNCHER_HOST && args[i]; i++)
		if (strv_push(&cmd, args[i]) < 0)
			return -AISB_EXIT_FAILED;
	log_info("phase %s: the library's pi: agent (%s) in a sandbox", phase, source_words[a->lsrc]);
	a->lib_args = args + 1;
	st = run_sandbox(a, phase, cmd, devnull, autophase_is_harness(cmd[0]) ? RUN_HARNESS : 0, &v);
	a->lib_args = NULL;
	r = lib_after_unit(a, phase, "agent", &v);
	return r ? -r : st;
}

/* run_validation ARGS: validate.sh ARGS as the driver runs it (its output on stderr); a first
 * argument naming a phase file (.agents/phases/NN-name.md) says which phase is worked on. */
static int lib_validate(struct ap *a, char **args)
{
	_cleanup_free_ char *tail = malloc(AUTOPHASE_MAX_FEEDBACK);
	_cleanup_strv_free_ char **vcmd = NULL;
	size_t tail_len = 0, dl = strlen(AUTOPHASE_DIR);
	const char *f = args[1], *phase;
	int st, r;

	if (f && strncmp(f, a->top, strlen(a->top)) == 0 && f[strlen(a->top)] == '/')
		f += strlen(a->top) + 1;
	for (size_t i = 0; f && i < a->n; i++)
		if (strncmp(f, AUTOPHASE_DIR, dl) == 0 && f[dl] == '/' && strncmp(f + dl + 1, a->phases[i], strlen(a->phases[i])) == 0 &&
		    streq(f + dl + 1 + strlen(a->phases[i]), ".md")) {
			free(a->lib_phase);
			if (!(a->lib_phase = strdup(a->phases[i])))
				return -AISB_EXIT_FAILED;
		}
	phase = lib_phase(a);
	if (!tail || strv_push(&vcmd, AUTOPHASE_VALIDATE) < 0)
		return -AISB_EXIT_FAILED;
	for (size_t i = 1; args[i]; i++)
		if (strv_push(&vcmd, args[i]) < 0)
			return -AISB_EXIT_FAILED;
	log_info("phase %s: the library's run_validation: %s %s", phase, AUTOPHASE_VALIDATE,
		 a->o->validate_on_host ? "on the host (--validate-in host)" : "in a sandbox");
	st = run_gate(a, phase, vcmd, tail, &tail_len);
	if (st < 0)
		return st;
	r = lib_after_unit(a, phase, AUTOPHASE_VALIDATE, NULL);
	return r ? -r : st;
}

/* What git would run that changed in the work tree since the library started, made by anything
 * (the library's own steps run on the host, outside every sandbox's check): moved into a
 * quarantine like a unit's. Return: 0 or 78 (logged). */
static int lib_check_tree(struct ap *a, const char *phase)
{
	struct gitguard_job j = { .since = a->lib_since };
	struct gitguard_verdict v = { 0 };
	_cleanup_free_ char *q = NULL;

	if (asprintf(&q, "%s/quarantine/autophase-%d-%u", a->o->state_dir, (int)getpid(), ++a->lib_checks) < 0 ||
	    gitguard_job_add(&j, a->top, false, NULL, q) < 0)
		return AISB_EXIT_FAILED;
	fflush(NULL);
	(void)gitguard_job_run(&j, stderr, &v);
	gitguard_job_free(&j);
	if (v.incomplete || v.failed || (v.found && !a->o->trust_git_changes))
		return log_error("phase %s: refusing to deliver: the library's work tree holds files for git made since it "
				 "started%s (named above, moved to '%s'); nothing of it is delivered. Inspect it; rerun with "
				 "--trust-git-changes to deliver such work anyway", phase,
				 v.incomplete || v.failed ? ", not all of them checkable or moved" : "", q),
		       AISB_EXIT_POLICY;
	if (v.found)
		log_warn("phase %s: the library's work tree held files for git (moved to '%s'); delivering the rest "
			 "anyway (--trust-git-changes)", phase, q);
	return 0;
}

/* push_phase, and the end of a library that committed: the guards, then the driver's commit of
 * the work tree on the last delivered commit (private index, host identity, trailer, the
 * library's last subject) when the library committed since, then the push. Return: 0, 1 (the
 * push failed) or an exit code < 0 negated (a refusal). */
static int lib_deliver(struct ap *a, const char *what)
{
	const char *phase = lib_phase(a);
	_cleanup_free_ char *now = NULL, *subject = NULL;
	size_t idx;
	int r = lib_check_tree(a, phase);

	if (r == 0)
		r = check_guards(a, phase);
	if (r == 0 && git_quiet(a, &now, "rev-parse", "-q", "--verify", a->ref) != 0)
		r = (log_error("phase %s: branch '%s' is gone; nothing delivered", phase, a->branch), AISB_EXIT_POLICY);
	if (r != 0)
		return -r;
	if (!streq(now, a->tip)) {
		if (git_quiet(a, &subject, "log", "-1", "--format=%s", now) != 0 || !*subject) {
			free(subject);
			subject = strdup(phase);
		}
		if (!subject)
			return -AISB_EXIT_FAILED;
		r = commit_phase(a, phase, subject);
		if (r != 0)
			return -(r == 1 ? AISB_EXIT_POLICY : r);
		free(a->lib_phase);
		a->lib_phase = NULL;
		r = next_phase(a, &idx);
		if (r != 0)
			return -r;
	}
	return a->o->push_remote ? push_tip(a, what) : 0;
}

/* The branch back at the last delivered commit when the library moved it and that was not
 * delivered (a refusal, a library that failed): its commits stay in the reflog, its work in the
 * work tree. */
static void lib_restore(struct ap *a)
{
	_cleanup_free_ char *now = NULL;

	if (git_quiet(a, &now, "rev-parse", "-q", "--verify", a->ref) != 0 || streq(now, a->tip))
		return;
	if (git(a, NULL, "update-ref", "-m", "aisb autophase: the library's undelivered commits", a->ref, a->tip, now) != 0)
		return (void)log_error("autophase: the library's commit %.12s on '%s' was not delivered, and the branch "
				       "could not be put back at %.12s: do it yourself (git reset --soft %.12s)", now,
				       a->branch, a->tip, a->tip);
	log_warn("autophase: the library's commit %.12s was not delivered: '%s' is back at %.12s (the commit stays in "
		 "the reflog, its work in the work tree)", now, a->branch, a->tip);
}

static int lib_serve(struct ap *a, int req, int rep, pid_t pid, bool *refused)
{
	FILE *f = fdopen(req, "r");
	int r = 0;

	if (!f)
		return close(req), AISB_EXIT_FAILED;
	for (;;) {
		_cleanup_strv_free_ char **v = NULL;
		char ans[16];
		int st, k = lib_read_request(f, &v);

		if (k == 0)
			break;
		if (k < 0 || !v[0]) {
			r = (log_error("autophase: the library's shell sent a request that is not one (kept apart from its "
				       "own output: nothing else writes to it)"), AISB_EXIT_FAILED);
			*refused = true;
			break;
		}
		st = streq(v[0], "pi") ? lib_agent(a, v) : streq(v[0], "validate") ? lib_validate(a, v)
			: streq(v[0], "deliver") ? lib_deliver(a, "push_phase") : -AISB_EXIT_FAILED;
		if (st < 0) {
			/* never answered: the library stops here, before anything of its own runs */
			*refused = true;
			r = -st;
			break;
		}
		snprintf(ans, sizeof(ans), "%d\n", st > 255 ? 255 : st);
		if (write_full(rep, ans, strlen(ans)) < 0)
			break;
	}
	if (*refused)
		kill(pid, SIGKILL);
	fclose(f);
	return r;
}

/* Starts the library's bash in the top of the work tree: the request pipe's write end and the
 * reply pipe's read end at LIB_REQ_FD and LIB_REP_FD (the only fds that reach it beyond 0-2:
 * the copies are not close-on-exec), library_git_env set over the driver's environment.
 * Return: 0 or -errno. Does not log. */
static int lib_spawn(const struct ap *a, const char *lib, const int req[2], const int rep[2], pid_t *pid)
{
	char *const argv[] = { (char *)"bash", (char *)"-c", (char *)library_script, (char *)"aisb-library",
			       (char *)lib, NULL };
	const struct spawn_fd fds[] = { { req[1], atoi(LIB_REQ_FD) }, { rep[0], atoi(LIB_REP_FD) } };
	char *env[ELEMENTSOF(library_git_env) + 1] = { NULL };
	int r = 0;

	for (size_t i = 0; i < ELEMENTSOF(library_git_env) && r >= 0; i++)
		if (asprintf(&env[i], "%s=%s", library_git_env[i][0], library_git_env[i][1]) < 0) {
			env[i] = NULL;
			r = -ENOMEM;
		}
	if (r >= 0)
		r = spawn(&(struct spawn_opts){ .path = BASH, .argv = argv, .fds = fds, .n_fds = ELEMENTSOF(fds),
						.cwd = a->top, .env_set = env },
			  pid);
	for (size_t i = 0; i < ELEMENTSOF(library_git_env); i++)
		free(env[i]);
	return r;
}

static int run_library(struct ap *a)
{
	const struct autophase_options *o = a->o;
	_cleanup_free_ char *lib = realpath(o->library, NULL);
	int req[2] = { -1, -1 }, rep[2] = { -1, -1 }, st = 0, r;
	bool refused = false;
	pid_t pid;

	if (!lib)
		return log_error_errno(-errno, "autophase: the library '%s': %m", o->library), AISB_EXIT_POLICY;
	if (pipe2(req, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0) {
		r = -errno;
		if (req[0] >= 0)
			close(req[0]), close(req[1]);
		return log_error_errno(r, "autophase: cannot make a pipe: %m"), AISB_EXIT_FAILED;
	}
	a->lib_before = quarantines(a);
	clock_gettime(CLOCK_REALTIME, &a->lib_since);
	log_info("autophase: running the pipeline library '%s' (pi, first_prompt, fix_prompt, run_validation and "
		 "push_phase shadowed by aisb)", o->library);
	fflush(NULL);
	r = lib_spawn(a, lib, req, rep, &pid);
	close(req[1]);
	close(rep[0]);
	if (r < 0) {
		/* as a bash that exits at once: nothing to deliver, the branch restored */
		close(req[0]), close(rep[1]);
		st = start_failed(r, "bash");
		r = 0;
	} else {
		r = lib_serve(a, req[0], rep[1], pid, &refused);
		close(rep[1]);
		st = spawn_wait(pid);
	}
	if (!refused && st == 0) {
		/* commits the library made after its last push_phase: delivered like one */
		_cleanup_free_ char *now = NULL;
		if (git_quiet(a, &now, "rev-parse", "-q", "--verify", a->ref) == 0 && !streq(now, a->tip)) {
			int d = lib_deliver(a, "autophase: at the end");
			if (d < 0)
				r = -d;
		}
	}
	if (refused || r != 0 || st != 0)
		lib_restore(a);
	if (refused)
		return r ? r : AISB_EXIT_POLICY;
	if (r == 0 && st == 0 && o->push_remote && a->push_url && any_delivered(a))
		r = push_tip(a, "autophase: at the end");
	return r ? r : st;
}

/* Stage: open. Should: set up git, open the repository, list the phases (@ignored: files of
 * the phase dir that are not phases), find the delivered ones and the push URL. Return: 0 or an
 * exit code. Logs on failure. */
static int ap_open(struct ap *a, const struct gitrun_user *u, char ***ignored)
{
	int r = gitrun_setup(&a->g, u) < 0 ? AISB_EXIT_FAILED : 0;

	if (r == 0)
		r = open_repo(a);
	if (r == 0)
		r = list_phases(a, &a->phases, ignored);
	if (r == 0) {
		a->n = strv_length(a->phases);
		r = scan_delivered(a);
	}
	if (r == 0)
		r = resolve_push_url(a);
	if (r == 0)
		warn_host_gate(a);
	return r;
}

/* --status: the report; a missing launcher or gate is reported, not fatal; each is looked at on
 * its own. */
static void ap_status(struct ap *a, char **ignored)
{
	(void)find_pipeline(a);
	(void)find_gate(a, true);
	print_report(a, false);
	for (size_t k = 0; ignored && ignored[k]; k++)
		printf("ignored:   %s/%s (not NN-name.md)\n", AUTOPHASE_DIR, ignored[k]);
}

/* Stage: prepare. Should: find the launcher and the gate, take the driver's lock (@lock; not
 * for a dry run), the identity, check the work tree is clean, snapshot it and run the preflight
 * of the first pending phase. Return: 0 or an exit code. Logs on failure. */
static int ap_prepare(struct ap *a, int *lock)
{
	int r = find_pipeline(a);

	if (r == 0)
		r = find_gate(a, false);
	if (r == 0 && !a->o->dry_run) {
		*lock = take_lock(a);
		r = *lock < 0 ? -*lock : 0;
	}
	if (r == 0)
		r = find_identity(a);
	if (r == 0)
		r = check_clean(a);
	if (r == 0)
		r = take_snapshot(a, &a->snap);
	if (r == 0)
		r = preflight(a, first_pending(a));
	return r;
}

/* One phase, @i: what was delivered before it pushed (when asked), its unit run, its guards
 * checked, its commit made (*@delivered counts it) and pushed. Return: 0, or the exit code that
 * stops the pipeline. Logs. */
static int run_phase(struct ap *a, size_t i, size_t *delivered)
{
	_cleanup_free_ char *subject = NULL, *ptext = NULL;
	size_t plen = 0;
	int r;

	if (a->o->push_remote && *delivered > 0) {
		_cleanup_free_ char *what = NULL;
		if (asprintf(&what, "before phase %s", a->phases[i]) < 0)
			return AISB_EXIT_FAILED;
		(void)push_tip(a, what);
	}
	if (read_phase(a, a->phases[i], &ptext, &plen) < 0 || !(subject = autophase_title(a->phases[i], ptext, plen)))
		return AISB_EXIT_FAILED;
	r = run_unit(a, a->phases[i], ptext, plen);
	if (r == 0)
		r = check_guards(a, a->phases[i]);
	if (r == 0)
		r = commit_phase(a, a->phases[i], subject);
	if (r != 0)
		return r;
	(*delivered)++;
	if (a->o->push_remote) {
		_cleanup_free_ char *what = NULL;
		if (asprintf(&what, "phase %s", a->phases[i]) < 0)
			return AISB_EXIT_FAILED;
		(void)push_tip(a, what);
	}
	return 0;
}

/* Stage: the pipeline, phase after phase until one fails or none is pending. The four push
 * points (the seed's): what an earlier run could not deliver, before the first unit; after each
 * phase's commit; again before the next phase starts when that failed; at the end. A failed
 * push does not stop the pipeline (the commit is delivered locally); the run's exit is 1 when
 * the end's push failed. Return: 0 or an exit code. Logs. */
static int run_phases(struct ap *a)
{
	const struct autophase_options *o = a->o;
	bool earlier = any_delivered(a); /* the branch held delivered phases before this run */
	size_t delivered = 0, i;
	int r;

	if (o->push_remote && earlier)
		(void)push_tip(a, "autophase: before the first unit, what an earlier run may not have pushed");
	for (;;) {
		r = next_phase(a, &i);
		if (r != 0 || i >= a->n)
			break;
		if ((r = run_phase(a, i, &delivered)) != 0)
			break;
	}
	/* at the end, whatever stopped the pipeline (a delivered commit must not stay local because
	 * a later phase failed), but not after ^C */
	if (o->push_remote && a->push_url && (earlier || delivered > 0) && r < 128) {
		/* the last phase's own push just failed on this commit: the end is that push's answer */
		int p = a->tried && streq(a->tried, a->tip) && !(a->pushed && streq(a->pushed, a->tip)) ? 1
			: push_tip(a, "autophase: at the end");
		if (r == 0)
			r = p;
	}
	if (r == 0)
		log_info("autophase: %zu phase%s delivered, %zu in all", delivered, delivered == 1 ? "" : "s", a->n);
	return r;
}

int autophase_main(const struct autophase_options *o)
{
	const struct gitrun_user u = { .home = o->home, .xdg_config = o->xdg_config_home, .env_name = o->env_name,
				       .env_email = o->env_email, .ssh_auth_sock = o->ssh_auth_sock,
				       .user_env = o->push_env };
	struct ap a = { .o = o, .capture_fd = -1 };
	_cleanup_strv_free_ char **ignored = NULL;
	_cleanup_close_ int lock = -1;
	int r = ap_open(&a, &u, &ignored);

	if (r == 0 && o->push_only)
		/* push_phase of a library (run_library()): the branch's tip, the same guarded push */
		r = o->push_remote ? push_tip(&a, "push_phase") : 0;
	else if (r == 0 && o->status)
		ap_status(&a, ignored);
	else if (r == 0 && (r = ap_prepare(&a, &lock)) == 0) {
		if (o->dry_run)
			print_report(&a, true);
		else if (o->library)
			/* the library schedules; every unit and delivery is still the driver's */
			r = run_library(&a);
		else
			r = run_phases(&a);
	}
	ap_free(&a);
	return r;
}
