// SPDX-License-Identifier: GPL-2.0-or-later
/* gitrun.c — hardened host git: fixed options, clean environment, argv only, bounded output */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/log.h"
#include "util/util.h"
#include "git/gitrun.h"

/* Options before the subcommand. Each names what it switches off; the list is the contract
 * docs/workspace.md repeats. */
static const char *const hardening[] = {
	"--no-pager",
	"-c", "core.hooksPath=/dev/null",      /* no hook runs (pre-commit, post-checkout, ...) */
	"-c", "core.fsmonitor=false",          /* no fsmonitor command */
	"-c", "core.pager=cat",
	"-c", "core.askPass=",                 /* no askpass program */
	"-c", "core.sshCommand=false",         /* and no ssh: only file:// is allowed below */
	"-c", "credential.helper=",            /* resets the helper list: no credential helper */
	"-c", "gc.auto=0",                     /* no auto-gc ... */
	"-c", "maintenance.auto=0",            /* ... and no auto-maintenance after a command */
	"-c", "protocol.allow=never",          /* no transport ... */
	"-c", "protocol.file.allow=always",    /* ... but local paths */
	"-c", "protocol.ext.allow=never",      /* never ext:: (runs a command) */
	"-c", "commit.gpgSign=false",          /* nothing is signed: no gpg program runs */
	"-c", "tag.gpgSign=false",
	"-c", "log.showSignature=false",
	"-c", "submodule.recurse=false",
	"-c", "fetch.recurseSubmodules=false",
	"-c", "transfer.fsckObjects=true",     /* what is fetched is checked */
	"-c", "fetch.fsckObjects=true",
	"-c", "init.templateDir=",             /* no template hooks copied into a new repo */
	"-c", "core.untrackedCache=false",
	"-c", "advice.detachedHead=false",
};

/* The whole environment of a hardened git: nothing inherited. */
static const char *const base_env[] = {
	"PATH=/usr/bin:/bin",
	"LC_ALL=C",
	"HOME=/nonexistent",
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_TERMINAL_PROMPT=0",
	"GIT_OPTIONAL_LOCKS=0",
	"GIT_NO_REPLACE_OBJECTS=1",
	"GIT_NO_LAZY_FETCH=1",
	"GIT_ATTR_NOSYSTEM=1",
	"GIT_PROTOCOL_FROM_USER=0",
	"GIT_ADVICE=0",
	"GIT_PAGER=cat",
	"GIT_EDITOR=false",          /* nothing may wait for an editor */
	"SSH_ASKPASS_REQUIRE=never",
};

static size_t copy_list(const char *const *from, size_t n, const char **to, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < max; i++)
		to[k++] = from[i];
	to[k] = NULL;
	return k;
}

size_t gitrun_hardening_args(const char **argv, size_t max)
{
	return copy_list(hardening, ELEMENTSOF(hardening), argv, max);
}

size_t gitrun_base_env(const char **env, size_t max)
{
	return copy_list(base_env, ELEMENTSOF(base_env), env, max);
}

void gitrun_sanitize(char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

bool gitrun_is_oid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n != 40 && n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Appends to a bounded buffer; past @max the rest is dropped and *over set. */
static int buf_add(char **b, size_t *len, size_t *cap, const char *s, size_t n, size_t max, bool *over)
{
	if (*len + n > max) {
		*over = true;
		n = *len < max ? max - *len : 0;
	}
	if (*len + n + 1 > *cap) {
		size_t c = (*cap ? *cap * 2 : 4096);
		while (c < *len + n + 1)
			c *= 2;
		char *nb = realloc(*b, c);
		if (!nb)
			return -ENOMEM;
		*b = nb;
		*cap = c;
	}
	memcpy(*b + *len, s, n);
	*len += n;
	(*b)[*len] = 0;
	return 0;
}

/* Builds "NAME=VALUE" into a strv. */
static int env_push(char ***v, const char *name, const char *value)
{
	char *e;
	if (asprintf(&e, "%s=%s", name, value) < 0)
		return -ENOMEM;
	return strv_push_take(v, e);
}

static int build_env(const struct gitrun *g, const struct gitrun_call *c, char ***out)
{
	char **v = NULL;
	int r = 0;

	for (size_t i = 0; i < ELEMENTSOF(base_env) && r >= 0; i++) {
		if (c->user_config && (strncmp(base_env[i], "HOME=", 5) == 0 ||
				       strncmp(base_env[i], "GIT_CONFIG_", 11) == 0))
			continue;
		r = strv_push(&v, base_env[i]);
	}
	if (r >= 0 && c->user_config && g->home)
		r = env_push(&v, "HOME", g->home);
	if (r >= 0 && c->user_config && g->xdg_config)
		r = env_push(&v, "XDG_CONFIG_HOME", g->xdg_config);
	if (r >= 0 && c->ident && g->name && g->email) {
		if ((r = env_push(&v, "GIT_AUTHOR_NAME", g->name)) >= 0 &&
		    (r = env_push(&v, "GIT_AUTHOR_EMAIL", g->email)) >= 0 &&
		    (r = env_push(&v, "GIT_COMMITTER_NAME", g->name)) >= 0)
			r = env_push(&v, "GIT_COMMITTER_EMAIL", g->email);
	}
	for (size_t i = 0; c->env && c->env[i] && r >= 0; i++)
		r = strv_push(&v, c->env[i]);
	if (r < 0) {
		strv_free(v);
		return -ENOMEM;
	}
	*out = v;
	return 0;
}

static int build_argv(const struct gitrun *g, const struct gitrun_call *c, char ***out)
{
	char **v = NULL;
	int r = strv_push(&v, g->git);

	for (size_t i = 0; i < ELEMENTSOF(hardening) && r >= 0; i++)
		r = strv_push(&v, hardening[i]);
	if (r >= 0 && g->excludes) {
		char *e;
		if (asprintf(&e, "core.excludesFile=%s", g->excludes) < 0 || strv_push(&v, "-c") < 0 ||
		    strv_push_take(&v, e) < 0)
			r = -ENOMEM;
	}
	if (r >= 0 && c->dir && (r = strv_push(&v, "-C")) >= 0)
		r = strv_push(&v, c->dir);
	for (size_t i = 0; c->args[i] && r >= 0; i++)
		r = strv_push(&v, c->args[i]);
	if (r < 0) {
		strv_free(v);
		return -ENOMEM;
	}
	*out = v;
	return 0;
}

int gitrun_call(const struct gitrun *g, struct gitrun_call *c)
{
	_cleanup_strv_free_ char **argv = NULL, **env = NULL;
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	size_t out_cap = 0, err_len = 0, err_cap = 0, in_off = 0;
	_cleanup_free_ char *errb = NULL;
	bool over = false, err_over = false;
	int st, r;
	pid_t pid;

	c->out = NULL;
	c->out_len = 0;
	c->err[0] = 0;
	if ((r = build_argv(g, c, &argv)) < 0 || (r = build_env(g, c, &env)) < 0)
		return r;
	if ((c->in_fd < 0 && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail_pipes;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto fail_pipes;
	}
	if (pid == 0) {
		/* the child: stdin, stdout, stderr from the pipes; nothing else open; argv, no shell */
		if (dup2(c->in_fd >= 0 ? c->in_fd : in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(127);
		(void)syscall(SYS_close_range, 3U, ~0U, 0U);
		signal(SIGPIPE, SIG_DFL);
		execve(argv[0], argv, env);
		_exit(127);
	}
	if (in[0] >= 0)
		close(in[0]);
	close(out[1]);
	close(err[1]);
	in[0] = out[1] = err[1] = -1;
	if (in[1] >= 0 && (!c->in || !c->in_len)) {
		close(in[1]);
		in[1] = -1;
	}
	if (in[1] >= 0)
		fcntl(in[1], F_SETFL, O_NONBLOCK);
	while (out[0] >= 0 || err[0] >= 0) {
		struct pollfd pf[3];
		int n = 0, io = -1, ie = -1, ii = -1;
		char buf[65536];
		ssize_t k;

		if (out[0] >= 0)
			pf[io = n++] = (struct pollfd){ out[0], POLLIN, 0 };
		if (err[0] >= 0)
			pf[ie = n++] = (struct pollfd){ err[0], POLLIN, 0 };
		if (in[1] >= 0)
			pf[ii = n++] = (struct pollfd){ in[1], POLLOUT, 0 };
		if (poll(pf, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (ii >= 0 && pf[ii].revents) {
			k = write(in[1], c->in + in_off, c->in_len - in_off);
			if (k > 0)
				in_off += (size_t)k;
			if ((k < 0 && errno != EAGAIN && errno != EINTR) || in_off == c->in_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
		if (io >= 0 && pf[io].revents) {
			k = read(out[0], buf, sizeof(buf));
			if (k > 0) {
				if (buf_add(&c->out, &c->out_len, &out_cap, buf, (size_t)k, GITRUN_OUT_MAX, &over) < 0)
					over = true;
			} else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(out[0]);
				out[0] = -1;
			}
		}
		if (ie >= 0 && pf[ie].revents) {
			k = read(err[0], buf, sizeof(buf));
			if (k > 0)
				(void)buf_add(&errb, &err_len, &err_cap, buf, (size_t)k, GITRUN_ERR_MAX - 1, &err_over);
			else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(err[0]);
				err[0] = -1;
			}
		}
	}
	if (in[1] >= 0)
		close(in[1]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (errb)
		snprintf(c->err, sizeof(c->err), "%s", errb);
	if (!c->out && buf_add(&c->out, &c->out_len, &out_cap, "", 0, 1, &over) < 0)
		return -ENOMEM;
	if (over)
		return -E2BIG;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);

fail_pipes:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	return r;
}

void gitrun_call_done(struct gitrun_call *c)
{
	free(c->out);
	c->out = NULL;
}

static int vcall(const struct gitrun *g, const char *dir, struct gitrun_call *c, va_list ap)
{
	_cleanup_strv_free_ char **args = NULL;
	const char *a;

	while ((a = va_arg(ap, const char *)))
		if (strv_push(&args, a) < 0)
			return -ENOMEM;
	c->dir = dir;
	c->args = (const char *const *)args;
	c->in_fd = -1;
	return gitrun_call(g, c);
}

int gitrun_line(const struct gitrun *g, const char *dir, char **out, ...)
{
	struct gitrun_call c = { .in_fd = -1 };
	va_list ap;
	char *nl;
	int r;

	va_start(ap, out);
	r = vcall(g, dir, &c, ap);
	va_end(ap);
	if (r != 0) {
		gitrun_call_done(&c);
		return r;
	}
	nl = strchr(c.out, '\n');
	if (nl)
		*nl = 0;
	*out = TAKE_PTR(c.out);
	return 0;
}

/* The first line of git's stderr, for a message. */
static const char *first_line(char *err)
{
	char *nl = strchr(err, '\n');
	if (nl)
		*nl = 0;
	gitrun_sanitize(err);
	return *err ? err : "no message";
}

int gitrun_ok(const struct gitrun *g, const char *dir, const char *what, ...)
{
	struct gitrun_call c = { .in_fd = -1 };
	va_list ap;
	int r;

	va_start(ap, what);
	r = vcall(g, dir, &c, ap);
	va_end(ap);
	gitrun_call_done(&c);
	if (r < 0)
		return log_error_errno(r, "%s: cannot run git: %m", what), -EIO;
	if (r > 0)
		return log_error("%s: git failed (%d): %s", what, r, first_line(c.err)), -EIO;
	return 0;
}

/* `git config --get KEY` with the user's own config. Return: the value or NULL. */
static char *user_config(struct gitrun *g, const char *repo, const char *key)
{
	const char *const args[] = { "config", "--get", key, NULL };
	struct gitrun_call c = { .dir = repo, .args = args, .in_fd = -1, .user_config = true };
	char *nl;

	if (gitrun_call(g, &c) != 0 || !c.out || !*c.out) {
		gitrun_call_done(&c);
		return NULL;
	}
	nl = strchr(c.out, '\n');
	if (nl)
		*nl = 0;
	return TAKE_PTR(c.out);
}

int gitrun_init(struct gitrun *g, const char *repo, unsigned what, const char *(*get)(const char *))
{
	static const char *const candidates[] = { "/usr/bin/git", "/usr/local/bin/git", "/bin/git" };
	const char *v;

	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < ELEMENTSOF(candidates) && !g->git[0]; i++)
		if (access(candidates[i], X_OK) == 0)
			snprintf(g->git, sizeof(g->git), "%s", candidates[i]);
	if (!g->git[0])
		return log_error("--workspace clone needs git on the host (/usr/bin/git): install the git package"),
		       -ENOENT;
	if ((v = get("HOME")) && path_is_absolute(v) && !(g->home = strdup(v)))
		return -ENOMEM;
	if ((v = get("XDG_CONFIG_HOME")) && path_is_absolute(v) && !(g->xdg_config = strdup(v)))
		return -ENOMEM;
	/* the user's identity, as git itself would take it: environment first, then config */
	if (!(what & GITRUN_IDENT))
		;
	else if ((v = get("GIT_AUTHOR_NAME")) && *v)
		g->name = strdup(v);
	else
		g->name = user_config(g, repo, "user.name");
	if (!(what & GITRUN_IDENT))
		;
	else if ((v = get("GIT_AUTHOR_EMAIL")) && *v)
		g->email = strdup(v);
	else
		g->email = user_config(g, repo, "user.email");
	if (what & GITRUN_EXCLUDES)
		g->excludes = user_config(g, repo, "core.excludesFile");
	if ((what & GITRUN_EXCLUDES) && !g->excludes && (g->xdg_config || g->home)) {
		/* git's default when the key is unset */
		_cleanup_free_ char *d = g->xdg_config ? strdup(g->xdg_config) : path_join(g->home, ".config");
		_cleanup_free_ char *f = d ? path_join(d, "git/ignore") : NULL;
		if (f && access(f, R_OK) == 0)
			g->excludes = TAKE_PTR(f);
	}
	if (g->excludes && g->excludes[0] == '~' && g->excludes[1] == '/' && g->home) {
		char *e = path_join(g->home, g->excludes + 2);
		free(g->excludes);
		g->excludes = e;
	}
	if ((what & GITRUN_IDENT) && (!g->name || !g->email))
		return log_error("importing commits needs your git identity, and none is set: git config --global "
				 "user.name 'Your Name' && git config --global user.email you@example.com"),
		       -EINVAL;
	return 0;
}

void gitrun_done(struct gitrun *g)
{
	free(g->name);
	free(g->email);
	free(g->excludes);
	free(g->home);
	free(g->xdg_config);
	memset(g, 0, sizeof(*g));
}
