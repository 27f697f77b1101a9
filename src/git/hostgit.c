// SPDX-License-Identifier: GPL-2.0-or-later
/* hostgit.c — git on the host, hardened: argv, environment, capture, URL redaction, identity */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "git/gitguard.h"
#include "git/hostgit.h"
#include "util/strbuf.h"
#include "util/util.h"

/* Set on the command line, where they beat every config file: each names a way git runs a
 * program, reads a credential, or waits for a human. The repository's config still applies for
 * everything else (it is fingerprinted by the caller). */
static const char *const hardening[] = {
	"-c", "core.hooksPath=/dev/null",  /* no hook, wherever the repo's config points */
	"-c", "core.fsmonitor=false",      /* core.fsmonitor runs a command on every status */
	"-c", "core.pager=cat",
	"-c", "core.askPass=",
	"-c", "credential.helper=",        /* an empty value resets the helper list */
	"-c", "protocol.ext.allow=never",  /* ext:: URLs run a command */
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "commit.gpgSign=false",
	"-c", "push.gpgSign=false",
	"-c", "submodule.recurse=false",
	"-c", "push.recurseSubmodules=no",
	"-c", "safe.bareRepository=explicit", /* an embedded bare repository is never entered */
	"--no-pager",
};

/* Where git is looked for: fixed, not the caller's PATH (which a sandbox-written project could
 * have prepended to, e.g. through a direnv file). */
static const char *const git_paths[] = { "/usr/local/bin/git", "/usr/bin/git", "/bin/git" };

char **hostgit_argv(const char *const *args)
{
	char **v = NULL;

	if (strv_push(&v, "git") < 0)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(hardening); i++)
		if (strv_push(&v, hardening[i]) < 0)
			goto oom;
	for (size_t i = 0; args && args[i]; i++)
		if (strv_push(&v, args[i]) < 0)
			goto oom;
	return v;
oom:
	strv_free(v);
	return NULL;
}

static int push_kv(char ***v, const char *k, const char *val)
{
	char *e;
	if (asprintf(&e, "%s=%s", k, val) < 0)
		return -ENOMEM;
	return strv_push_take(v, e);
}

char **hostgit_env(const struct hostgit *g)
{
	static const char *const fixed[] = {
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LC_ALL=C",                /* messages the caller can match */
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",            /* set but empty: no askpass program at all (git's prompt.c) */
		"SSH_ASKPASS_REQUIRE=never",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_EDITOR=false",        /* nothing may wait for an editor */
		"GIT_NO_REPLACE_OBJECTS=1", /* refs/replace/ is writable by a sandbox */
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_OPTIONAL_LOCKS=0",
	};
	char **v = NULL;

	for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
		if (strv_push(&v, fixed[i]) < 0)
			goto oom;
	if ((g->home && push_kv(&v, "HOME", g->home) < 0) ||
	    (g->ssh_auth_sock && push_kv(&v, "SSH_AUTH_SOCK", g->ssh_auth_sock) < 0) ||
	    (g->index_file && push_kv(&v, "GIT_INDEX_FILE", g->index_file) < 0))
		goto oom;
	if (g->name && (push_kv(&v, "GIT_AUTHOR_NAME", g->name) < 0 || push_kv(&v, "GIT_COMMITTER_NAME", g->name) < 0))
		goto oom;
	if (g->email &&
	    (push_kv(&v, "GIT_AUTHOR_EMAIL", g->email) < 0 || push_kv(&v, "GIT_COMMITTER_EMAIL", g->email) < 0))
		goto oom;
	return v;
oom:
	strv_free(v);
	return NULL;
}

static const char *find_git(void)
{
	for (size_t i = 0; i < ELEMENTSOF(git_paths); i++)
		if (access(git_paths[i], X_OK) == 0)
			return git_paths[i];
	return NULL;
}

/* The child between fork and execve: only async-signal-safe calls. */
_noreturn_ static void exec_git(const char *git, const char *dir, int in, int out, int err, char **argv,
				char **envp)
{
	sigset_t none;

	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)signal(SIGINT, SIG_DFL);
	(void)signal(SIGQUIT, SIG_DFL);
	(void)signal(SIGPIPE, SIG_DFL);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 || chdir(dir) < 0)
		_exit(126);
	execve(git, argv, envp);
	_exit(127);
}

/* Reads @fd into @b (dropping what is past @max) until EOF; non-blocking fds, poll()ed by the
 * caller. Return: 1 at EOF, 0 for more later, -errno. */
static int drain(int fd, struct strbuf *b, size_t max)
{
	char buf[8192];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n == 0)
			return 1;
		if (n < 0)
			return errno == EAGAIN ? 0 : errno == EINTR ? 0 : -errno;
		if (b && b->n < max && strbuf_put(b, buf, (size_t)n > max - b->n ? max - b->n : (size_t)n) < 0)
			return -ENOMEM;
	}
}

int hostgit_run(const struct hostgit *g, const char *const *args, char **out, char **err)
{
	_cleanup_strv_free_ char **argv = hostgit_argv(args), **envp = hostgit_env(g);
	_cleanup_close_ int devnull = -1;
	int opipe[2] = { -1, -1 }, epipe[2] = { -1, -1 };
	struct strbuf ob = { 0 }, eb = { 0 };
	const char *git = find_git();
	int r = 0, st = 0;
	pid_t pid;

	if (!git)
		return -ENOENT;
	if (!argv || !envp)
		return -ENOMEM;
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		return -errno;
	if (pipe2(opipe, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(epipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = -errno;
		goto out_close;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out_close;
	}
	if (pid == 0)
		exec_git(git, g->worktree, devnull, out ? opipe[1] : devnull, err ? epipe[1] : devnull, argv, envp);
	close(opipe[1]);
	close(epipe[1]);
	opipe[1] = epipe[1] = -1;
	{
		bool odone = false, edone = false;
		while (r == 0 && !(odone && edone)) {
			struct pollfd p[2] = { { odone ? -1 : opipe[0], POLLIN, 0 }, { edone ? -1 : epipe[0], POLLIN, 0 } };
			if (poll(p, 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				r = -errno;
				break;
			}
			if (!odone && p[0].revents) {
				int d = drain(opipe[0], out ? &ob : NULL, HOSTGIT_MAX_OUT);
				odone = d != 0;
				r = d < 0 ? d : 0;
			}
			if (r == 0 && !edone && p[1].revents) {
				int d = drain(epipe[0], err ? &eb : NULL, HOSTGIT_MAX_ERR);
				edone = d != 0;
				r = d < 0 ? d : 0;
			}
		}
	}
	if (r < 0)
		(void)kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			r = r < 0 ? r : -errno;
			break;
		}
	if (r == 0)
		r = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (r >= 0 && out) {
		*out = ob.p ? TAKE_PTR(ob.p) : strdup("");
		if (!*out)
			r = -ENOMEM;
	}
	if (r >= 0 && err) {
		*err = eb.p ? TAKE_PTR(eb.p) : strdup("");
		if (!*err) {
			r = -ENOMEM;
			if (out) {
				free(*out);
				*out = NULL;
			}
		}
	}
out_close:
	free(ob.p);
	free(eb.p);
	for (int i = 0; i < 2; i++) {
		if (opipe[i] >= 0)
			close(opipe[i]);
		if (epipe[i] >= 0)
			close(epipe[i]);
	}
	return r;
}

/* End of a URL's authority: where user info can no longer be. */
static bool ends_authority(char c)
{
	return c == 0 || c == '/' || c == '?' || c == '#' || c == '\'' || c == '"' || c == '`' ||
	       isspace((unsigned char)c) || c == '<' || c == '>';
}

/* For "://" at @s: the length of the user info to hide after it (up to its last '@'), 0: none. */
static size_t userinfo_len(const char *s)
{
	size_t at = 0;
	for (size_t i = 0; !ends_authority(s[i]); i++)
		if (s[i] == '@')
			at = i + 1;
	return at ? at - 1 : 0;
}

bool hostgit_has_credentials(const char *text)
{
	for (const char *p = strstr(text, "://"); p; p = strstr(p + 3, "://"))
		if (userinfo_len(p + 3) > 0)
			return true;
	return false;
}

char *hostgit_redact(const char *text)
{
	struct strbuf b = { 0 };
	const char *p = text;

	for (const char *s = strstr(p, "://"); s; s = strstr(p, "://")) {
		size_t n = userinfo_len(s + 3);
		if (strbuf_put(&b, p, (size_t)(s + 3 - p)) < 0)
			goto oom;
		p = s + 3;
		if (n == 0)
			continue;
		if (strbuf_puts(&b, "<redacted>") < 0)
			goto oom;
		p += n;
	}
	if (strbuf_puts(&b, p) < 0)
		goto oom;
	return b.p ? b.p : strdup("");
oom:
	free(b.p);
	return NULL;
}

struct ident_scan {
	char *name, *email;
};

static int ident_fn(const char *section, const char *subsection, const char *key, const char *value, void *ud)
{
	struct ident_scan *s = ud;
	char **slot;

	if (subsection || !streq(section, "user") || !value)
		return 0;
	slot = streq(key, "name") ? &s->name : streq(key, "email") ? &s->email : NULL;
	if (!slot)
		return 0;
	free(*slot); /* the last one in a file wins, as in git */
	*slot = strdup(value);
	return *slot ? 0 : -ENOMEM;
}

int hostgit_identity(const char *const *files, char **name, char **email)
{
	*name = *email = NULL;
	for (size_t i = 0; files && files[i]; i++) {
		_cleanup_free_ char *text = NULL;
		struct ident_scan s = { 0 };
		size_t len = 0;
		int r = read_file_at(AT_FDCWD, files[i], GITGUARD_MAX_CONFIG, &text, &len);
		if (r == -ENOENT || r == -ENOTDIR)
			continue;
		if (r >= 0)
			r = gitguard_config_parse(text, len, ident_fn, &s);
		if (r < 0) {
			free(s.name);
			free(s.email);
			free(*name);
			free(*email);
			*name = *email = NULL;
			return r;
		}
		if (!*name)
			*name = TAKE_PTR(s.name);
		if (!*email)
			*email = TAKE_PTR(s.email);
		free(s.name);
		free(s.email);
	}
	return 0;
}
